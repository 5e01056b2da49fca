"""The vocabulary of outcomes: a cell's status and, when it did not measure, the error kind.

Both are ``StrEnum``: stored records keep the plain strings ("ok", "transport", ...), and a
member compares equal to its string, so records read back from older runs need no mapping.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    OK = "ok"  # measured, outputs match ONNX Runtime (or no reference to check against)
    MISMATCH = "mismatch"  # measured, but the outputs differ from ONNX Runtime
    FAILED = "failed"  # could not be measured: error_kind says why
    SKIPPED = "skipped"  # not measured by choice or setup (framework not installed, ...)
    UNSUPPORTED = "unsupported"  # the framework cannot run this model or precision


class ErrorKind(StrEnum):
    # Reported by the runner on the device (runners/protocol/__init__.py ERROR_KINDS; a test keeps
    # the two in step).
    BAD_SPEC = "bad_spec"
    NOT_INSTALLED = "not_installed"
    MODEL_LOAD = "model_load"
    UNSUPPORTED = "unsupported"
    PINNING = "pinning"
    INFERENCE = "inference"
    OUT_OF_MEMORY = "out_of_memory"
    INTERNAL = "internal"
    FALLBACK = "fallback"  # asked for an accelerator, ran on the CPU: never a GPU figure
    # Decided on the host.
    TRANSPORT = "transport"  # the device's connection dropped or never came up
    RUNNER = "runner"  # the runner exited or timed out without a result
    TOOL_FAILED = "native_tool"  # a native benchmark binary failed or printed nothing usable
    LOCK = "lock"  # another run holds the device, or took its lock over
    HOST_LOST = "host_lost"  # the lab host that owns the device left the cluster mid-run
    OTHER_FORMAT = "other_format"  # a pre-converted model only its own framework runs
    # From the converters.
    UNSUPPORTED_OP = "unsupported_op"
    UNSUPPORTED_PRECISION = "unsupported_precision"
    TOOLCHAIN_MISSING = "toolchain_missing"
    CONVERSION_FAILED = "failed"


#: Cells a resumed run does not measure again (failed ones are retried).
DONE = frozenset({Status.OK, Status.MISMATCH, Status.UNSUPPORTED, Status.SKIPPED})
#: Cells with samples: worth another interleaved round, and pooled across rounds.
MEASURED = frozenset({Status.OK, Status.MISMATCH})
#: Cells that make `edgebench run` exit 1.
PROBLEMS = frozenset({Status.FAILED, Status.MISMATCH})
