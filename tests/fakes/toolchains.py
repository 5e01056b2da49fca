"""The converter toolchains as the tests meet them. pnnx (ncnn's, 110 MB) is installed by the
tests that need it, on first use. onnx2tf (TFLite's, with TensorFlow: 2.6 GB) never is: a test
that compares against it skips without it, naming the command that installs it, as the tests
that need an apt package name the package. .ci/run installs it before the tests."""

from __future__ import annotations

import pytest

from edgebench.converters import Converter, get_converter
from edgebench.converters.toolchains import (
    ToolchainStatus,
    install_toolchain,
    toolchain_status,
    toolchain_unavailable,
)

ONNX2TF = "tflite"  # the toolchain's name: `edgebench toolchains install tflite`
PNNX = "ncnn"  # ncnn's: `edgebench toolchains install ncnn`


def pnnx_or_skip() -> None:
    """ncnn's converter toolchain (pnnx, 110 MB), installed on first use under the toolchains'
    lock (a no-op once there); skip naming the command when it cannot be. With two test
    processes, whichever test needs it first may run in either, so each test asks."""
    if toolchain_unavailable(PNNX) is None:
        return
    if install_toolchain(PNNX).state != "installed":
        pytest.skip("pnnx could not be installed (edgebench toolchains install ncnn)")


def converter_or_skip(fmt: str) -> Converter:
    """edgebench's converter for ``fmt``, ready to convert (pnnx installed first for ncnn);
    else skip with the converter's own reason."""
    if fmt == PNNX:
        pnnx_or_skip()
    converter = get_converter(fmt)
    reason = converter.unavailable_reason()
    if reason:
        pytest.skip(reason)
    return converter


def onnx2tf_or_skip() -> ToolchainStatus:
    """The installed onnx2tf toolchain; without a healthy one, skip with its install command."""
    reason = toolchain_unavailable(ONNX2TF)
    if reason is not None:
        pytest.skip(f"{reason} (.ci/run installs it; the tests never download TensorFlow)")
    return toolchain_status(ONNX2TF)
