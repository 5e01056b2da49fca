"""edgebench's own .tflite -> ONNX reader, the mirror image of the writer in ``tflite/``."""

from .convert import ImportReport, IoTensor, real_values, tflite_to_onnx

__all__ = ["ImportReport", "IoTensor", "real_values", "tflite_to_onnx"]
