"""TensorRT: an engine built from the ONNX model on this GPU, run through the CUDA runtime.

(Declarations only for now; the Backend comes with the engine builder.)
"""

from __future__ import annotations

FRAMEWORK = "tensorrt"
REQUIRES = ()
ACCELERATORS = ("cuda",)
NATIVE_ONLY = "the TensorRT backend of the Python runner is being written (issue 30)"
PIP_EXTRA = None
