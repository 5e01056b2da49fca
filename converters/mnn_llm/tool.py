"""MNN's converter (``mnnconvert``) from the mnn wheel, in an isolated subprocess as for tensor
models: the ``_tools`` extension itself, not ``MNN.tools`` (importing that runs pip and uploads
usage logs)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..isolation import convert_in_python_subprocess

_SCRIPT = """
import sys
import _tools
ok = _tools.mnnconvert(["mnnconvert", *sys.argv[1:]])
sys.exit(0 if ok in (0, True) else 3)
"""


def mnnconvert(args: Sequence[str], cwd: Path, expected: Path, timeout: float) -> str:
    """Run mnnconvert with ``args``; its log. ConversionError where it fails or ``expected``
    is not there after it, ``unsupported_op`` where its log says an op is not supported."""
    return convert_in_python_subprocess(
        label="mnnconvert",
        script=_SCRIPT,
        args=list(args),
        out_dir=cwd,
        expected=expected,
        timeout=timeout,
        unsupported_markers=("not support", "unsupported"),
    ).log
