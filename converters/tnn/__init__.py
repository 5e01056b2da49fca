"""ONNX -> TNN (.tnnproto + .tnnmodel) conversion.

``writer.convert_model`` produces the two files. The code that checks them (a reader written
from TNN's loader and a NumPy executor following TNN's CPU backend) is in ``checking/``, which
this package does not import: only the tests and debugging load it.
"""

from edgebench.converters.tnn.writer import TnnFiles, convert_model

__all__ = ["TnnFiles", "convert_model"]
