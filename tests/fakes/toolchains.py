"""The converter toolchains as the tests meet them. pnnx (ncnn's, 110 MB) is installed by the
tests that need it, on first use. onnx2tf (TFLite's, with TensorFlow: 2.6 GB) never is: a test
that compares against it skips without it, naming the command that installs it, as the tests
that need an apt package name the package. .ci/run installs it before the tests."""

from __future__ import annotations

import pytest

from edgebench.converters.toolchains import ToolchainStatus, toolchain_status, toolchain_unavailable

ONNX2TF = "tflite"  # the toolchain's name: `edgebench toolchains install tflite`


def onnx2tf_or_skip() -> ToolchainStatus:
    """The installed onnx2tf toolchain; without a healthy one, skip with its install command."""
    reason = toolchain_unavailable(ONNX2TF)
    if reason is not None:
        pytest.skip(f"{reason} (.ci/run installs it; the tests never download TensorFlow)")
    return toolchain_status(ONNX2TF)
