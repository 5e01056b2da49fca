"""ONNX -> target-format converters (MNN, ncnn, TFLite, OpenVINO, TNN), one module per format.

Imported as ``edgebench.converters``. Empty until the converters issue lands: for now every
framework other than ONNX Runtime is reported as not installed or without a backend.
"""
