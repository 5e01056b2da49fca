"""Small shared libraries built from C source for a test: a native library's stand-in where
the real one cannot exist here (a vendor library of hardware this machine lacks)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def shared_library(path: Path, source: str) -> Path:
    """``source`` compiled into the shared library ``path`` (skips the test without cc)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("needs a C compiler: apt-get install gcc")
    source_file = path.with_name(path.name + ".c")
    source_file.write_text(source)
    command = [compiler, "-shared", "-fPIC", "-o", str(path), str(source_file)]
    subprocess.run(command, check=True, timeout=120)
    return path
