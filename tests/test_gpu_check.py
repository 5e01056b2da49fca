"""benchmarks/gpu_check.py on a machine without an NVIDIA GPU: one line saying what it needs,
exit status 2, nothing measured."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from edgebench.runners.cuda_runtime import CudaUnavailable, open_cuda

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_check.py"


def has_gpu() -> bool:
    try:
        return open_cuda().device_count() > 0
    except CudaUnavailable:
        return False


@pytest.mark.skipif(has_gpu(), reason="this machine has an NVIDIA GPU: the script measures")
def test_gpu_check_says_it_needs_a_gpu_in_one_line():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stdout.splitlines()
    assert line.startswith("gpu_check: needs an NVIDIA GPU with the tensorrt package; here: ")
    assert "no NVIDIA GPU: " in line
    assert "Traceback" not in proc.stderr
