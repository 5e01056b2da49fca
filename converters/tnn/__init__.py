"""ONNX -> TNN (.tnnproto + .tnnmodel) conversion, a TNN file reader and a NumPy executor.

``writer.convert_model`` produces the two files, ``reader.read_model`` parses them back, and
``reference.run_model`` executes what the reader returns. TNN itself (its converter and its
runtime) cannot be installed here, so these three together are how the output is checked.
"""

from edgebench.converters.tnn.reader import TnnModel, read_model
from edgebench.converters.tnn.reference import run_model
from edgebench.converters.tnn.writer import TnnFiles, convert_model

__all__ = ["TnnFiles", "TnnModel", "convert_model", "read_model", "run_model"]
