"""What the backends share for a cell on an accelerator: the ``accelerator`` report of the result
line, the refusal and fallback errors, and the capture of what a framework's native code prints
while it picks its device. (The runner completes the report with what the device says of
itself: accelerator_run.py.)

Runs on the device: Python 3.8+, standard library only.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import tempfile
from typing import Any, Dict, Iterator, List, Sequence

from ..protocol.errors import BackendError

CPU = "cpu"

#: The report's keys: exactly the fields of the host's record part
#: (edgebench/results/accelerator_part.py ``AcceleratorRun``; a host test keeps them equal).
ACCELERATOR_KEYS = (
    "api",
    "device",
    "device_type",
    "software",
    "driver",
    "api_version",
    "precision",
    "delegated_ops",
    "total_ops",
    "device_memory_mb",
    "device_memory_unavailable",
    "stages_note",
    "engine_build_ms",
    "engine_cache",
    "cuda_graph",
    "placement",
)


def accelerator_report(api: str, **known: Any) -> Dict[str, Any]:
    """The result line's ``accelerator`` object: every key, those not known as None."""
    unknown = sorted(set(known) - set(ACCELERATOR_KEYS))
    if unknown:
        raise ValueError("not accelerator report keys: %s" % ", ".join(unknown))
    report: Dict[str, Any] = dict.fromkeys(ACCELERATOR_KEYS)
    report.update(known)
    report["api"] = api
    report["software"] = bool(report["software"])
    return report


def refusal(
    framework: str, backend: str, selectable: Sequence[str], has_cpu: bool = True
) -> BackendError:
    """The error for a backend the framework's Python binding cannot select."""
    offers = ", ".join([CPU, *selectable] if has_cpu else selectable) if selectable else "only cpu"
    return BackendError(
        "unsupported",
        "the Python runner cannot run %s on %s: its %s binding selects %s (edgebench-native "
        "or the framework's own tool may, where they offer %s)"
        % (framework, backend, framework, offers, backend),
    )


def fallback(framework: str, backend: str, words: str) -> BackendError:
    """The error for a framework that was asked for an accelerator and ran on the CPU."""
    return BackendError(
        "fallback", "%s asked for %s and ran on the CPU: %s" % (framework, backend, words)
    )


class NativeOutput:
    """The lines native code wrote to stdout and stderr while a ``native_output`` block ran."""

    def __init__(self) -> None:
        self.lines: List[str] = []

    def matching(self, *needles: str) -> List[str]:
        """The lines holding any of ``needles``, stripped."""
        return [line.strip() for line in self.lines if any(n in line for n in needles)]


@contextlib.contextmanager
def native_output(capture: bool = True) -> Iterator[NativeOutput]:
    """Capture what the framework's C/C++ code prints (file descriptors 1 and 2, C stdio
    flushed) while the block runs, and pass it on to stderr afterwards: a framework that picks
    another device than asked often says so only there. Nothing is redirected when
    ``capture`` is false (a CPU cell) or no temporary file can be made."""
    captured = NativeOutput()
    with contextlib.ExitStack() as stack:
        try:
            sink = stack.enter_context(tempfile.TemporaryFile()) if capture else None
        except OSError:
            sink = None
        if sink is None:
            yield captured
            return
        sys.stdout.flush()
        sys.stderr.flush()
        saved = (os.dup(1), os.dup(2))
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            _flush_c_stdio()
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            sink.seek(0)
            text = sink.read()
            _write_stderr(text)
            captured.lines.extend(text.decode("utf-8", "replace").splitlines())


def _write_stderr(data: bytes) -> None:
    view = memoryview(data)
    while view:  # each write takes at least one byte or raises
        view = view[os.write(2, view) :]


def _flush_c_stdio() -> None:
    # printf output sits in the C library's buffer while stdout is not a terminal.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).fflush(None)
