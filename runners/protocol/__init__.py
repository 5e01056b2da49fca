"""What the host and the on-device runner share, and the only part of the runner the host
imports (tests/test_protocol_boundary.py). This module: the schema names, the result line, the
error kinds and statuses a runner result carries, the install hint, and the Linux CPU-list
syntax. Its submodules: the spec (spec.py), the result and its parts (run_result.py,
result_parts.py, typed_json.py), backend options, the seeded inputs and input files
(tensors.py), the file formats both sides read (io_map.py, ncnn_param.py, gguf.py,
llm_shape.py), the telemetry vocabulary, the operator profile's shape and device naming.

Definitions only, no device behaviour; Python 3.8, relative imports, stdlib (+ numpy where a
format needs it). The runner imports it on the device as ``edgebench_runner.protocol``; the
host imports it as ``edgebench.runners.protocol``.
"""

from typing import List, Set

#: The runner's input: one JSON object (spec.py's ``RunSpec`` defines its fields).
SPEC_SCHEMA = "edgebench.spec/1"
#: The runner's output: one JSON object with raw per-iteration samples (run_result.py's
#: ``RunResult`` defines its fields).
RESULT_SCHEMA = "edgebench.result/1"
#: ``runner.py --probe``: which frameworks the device can run.
PROBE_SCHEMA = "edgebench.probe/1"
#: The runner prints its result as the last stdout line, this prefix then compact JSON.
RESULT_PREFIX = "EDGEBENCH_RESULT "

#: ``error.kind`` of a runner result that did not measure.
ERROR_KINDS = (
    "bad_spec",  # the spec itself is malformed
    "not_installed",  # framework module missing on the device
    "model_load",  # model file missing, corrupt or rejected
    "unsupported",  # framework cannot run this model/precision
    "pinning",  # requested cores could not be applied
    "inference",  # the inference call raised
    "out_of_memory",  # an allocation failed (MemoryError)
    "internal",  # a bug in the runner
    "fallback",  # an accelerator backend was asked for and the framework ran on the CPU
)

#: ``status`` of a runner result; the host adds its own on top (skipped, mismatch).
STATUSES = ("ok", "failed", "unsupported")


def status_of(error_kind: str) -> str:
    """The status of a result that failed with ``error_kind``."""
    return "unsupported" if error_kind in ("unsupported", "fallback") else "failed"


def install_hint(pip_extra: str) -> str:
    """How to install a framework, as the runner's and the host's messages say it."""
    return "pip install 'edgebench[%s]'" % pip_extra


#: The largest cpu id a cpu list may name (Linux builds for at most 8192 cpus), so that a range
#: such as 0-99999999999 is refused instead of expanded.
MAX_CPU_ID = 8191


def parse_cpu_list(text: str) -> List[int]:
    """Linux cpu-list syntax ("0-3,6") to sorted unique ids; ValueError when malformed."""
    cpus: Set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise ValueError("empty item in cpu list %r" % text)
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError("%r is not a cpu id or range" % part)
        if sep and int(lo) > int(hi):
            raise ValueError("bad cpu range %r" % part)
        if int(hi if sep else lo) > MAX_CPU_ID:
            raise ValueError("cpu %s is over the limit of %d" % (hi if sep else lo, MAX_CPU_ID))
        cpus.update(range(int(lo), int(hi if sep else lo) + 1))
    return sorted(cpus)
