"""TNN ``TNNTest``.

Command::

    TNNTest -mt TNN -mp model.tnnproto -dt ARM -th N -wc W -ic I [-pr HIGH|LOW]
            [-is name[n,c,h,w]] [-op out.txt]

``-dt`` is the adapter's ``device_type`` (ARM for Android/ARM Linux, X86 for x86_64, NAIVE for
the reference kernels). Precision fp32 -> ``-pr HIGH``, fp16 -> ``-pr LOW`` (``NORMAL`` and the
default ``AUTO`` may pick fp16 on ARM). ``-is`` takes exactly one ``name[dims]`` in test/test.cc
(TNNTest parses a single entry), so it is passed only for single-input models; multi-input
models run with the input shapes stored in the ``.tnnproto``. ``input_shape_syntax="colon"``
writes the ``in_0:1,3,512,512;in_1:...;`` form that doc/en/user/test_en.md describes, for builds
that parse it (all inputs). ``-op`` (the cell's ``output_file``) makes TNNTest
write the outputs of the last timed run; read it with :func:`parse_tnn_output_file`.

Result line (TNN test/timer.cc)::

    I/tnn: Print [File test/timer.cc][Line 59] tinyresnet.opt.tnnproto - X86   TNN Benchmark \
time cost: min =  3.718   ms  |  max =  5.653   ms  |  avg =  4.725   ms

On Linux it goes to stdout (``I/tnn: `` prefix; older builds printed it twice, through
``E/tnn:`` on stderr and a plain printf). On Android it is logged to logcat under the tag
``tnn`` (newer builds also print it to stdout), so construct the adapter with ``android=True``:
run :meth:`clear_logcat_command` before and :meth:`logcat_command` after the tool and pass the
dump as ``logcat``. The label is the model file name, followed by `` - <device type>`` in newer
builds. Times are milliseconds; only min, max and avg are printed; the iteration count is not.

Accelerators: ``-dt`` is the registry's device for an accelerator cell (``OPENCL``, ``CUDA``)
instead of ``device_type``; ``-pr HIGH`` keeps OpenCL in fp32, ``LOW`` lets it use fp16. TNN
has no silent fallback: a device it cannot start ends the run before a result (with exit
status 0), e.g. in a build without OpenCL ``E/tnn: Init [File source/tnn/core/instance.cc][Line
61] device is nil or unsupported for type: 4096`` and ``... create instance failed: code: 0x9000
msg: device is nil or unsupported`` (a refusal, quoted). The result line's `` - OPENCL``
suffix (newer builds) says which device ran it; release builds print no device name (``LOGD``
only).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .accelerator import BackendReport, accelerator_run, quote, tool_argument
from .base import (
    NUMBER,
    SummaryLineAdapter,
    ToolCell,
    ToolParseError,
    int_or_none,
    parse_number,
    shape_arg,
)

_RESULT_RE = re.compile(
    rf"^(?P<head>.*?)TNN Benchmark time cost:\s*min\s*=\s*(?P<min>{NUMBER})\s*ms\s*\|\s*"
    rf"max\s*=\s*(?P<max>{NUMBER})\s*ms\s*\|\s*avg\s*=\s*(?P<avg>{NUMBER})\s*ms",
    re.ASCII,
)
_LOCATION_RE = re.compile(r"^.*?\[File [^\]]*\]\[Line \d+\]\s*", re.ASCII)
_DEVICE_SUFFIX_RE = re.compile(r"\s+-\s+(?P<device>[A-Z][A-Z0-9_]*)\s*$", re.ASCII)
_CHECK_FAILED_RE = re.compile(
    r"\b(?:init tnn|create instance) failed:|device is nil or unsupported", re.ASCII
)
# `<name> mat_type: 32 dims: 2 1 10` (current) or `<name> 2 1 10` (older builds).
_HEADER_TYPED_RE = re.compile(
    r"^(?P<name>.*?)\s+mat_type:\s*(?P<type>-?\d+)\s+dims:\s*(?P<dims>.*)$", re.ASCII
)

#: TNN MatType codes that are written as integers (NC_INT32 = 0x21).
_INT_MAT_TYPES = {0x21}


def _label(head: str) -> str:
    """The model label in front of "TNN Benchmark time cost": after the log location
    (``Print [File ...][Line N]``), without the `` - <device>`` suffix."""
    head = _LOCATION_RE.sub("", head, count=1)
    return _DEVICE_SUFFIX_RE.sub("", head).strip()


@dataclass(kw_only=True, eq=False)
class TnnTestAdapter(SummaryLineAdapter):
    framework = "tnn"
    binary = "TNNTest"
    logcat_tag = "tnn"
    result_re = _RESULT_RE
    result_line = "'TNN Benchmark time cost: min = ... ms | max = ... ms | avg = ... ms' line"
    no_op_profile = (
        "TNNTest prints only whole-model min/max/avg "
        "(per-layer times need a TNN build with TNN_PROFILER_ENABLE)"
    )

    PRECISION_FLAGS: ClassVar[dict[str, str]] = {"fp32": "HIGH", "fp16": "LOW"}

    device_type: str = "ARM"
    android: bool = False
    input_shape_syntax: str = "bracket"

    def __post_init__(self) -> None:
        super().__post_init__()
        syntax = self.input_shape_syntax
        if syntax not in ("bracket", "colon"):
            raise ValueError(f"input_shape_syntax must be 'bracket' or 'colon', got {syntax!r}")

    @classmethod
    def for_cell(cls, backend: str, android: bool) -> TnnTestAdapter:
        return cls(android=android)

    def needs_logcat(self) -> bool:
        return self.android

    def command(self, binary_path: str, cell: ToolCell) -> list[str]:
        argv = [
            binary_path,
            "-mt",
            "TNN",
            "-mp",
            cell.model_path,
            "-dt",
            tool_argument(self.framework, cell.backend) or self.device_type,
            "-th",
            str(cell.threads),
            "-wc",
            str(cell.warmup),
            "-ic",
            str(cell.iterations),
            "-pr",
            self.PRECISION_FLAGS[cell.precision],
        ]
        shapes = {
            name: ",".join(str(d) for d in shape_arg(dims, what=f"TNN input {name!r}"))
            for name, dims in cell.input_shapes.items()
        }
        if self.input_shape_syntax == "colon" and shapes:
            argv += ["-is", "".join(f"{name}:{dims};" for name, dims in shapes.items())]
        elif len(shapes) == 1:
            ((name, dims),) = shapes.items()
            argv += ["-is", f"{name}[{dims}]"]
        if cell.output_file:
            argv += ["-op", cell.output_file]
        return argv

    def label(self, match: re.Match[str]) -> str:
        return _label(match.group("head"))

    def accelerator_lines(self, cell: ToolCell, lines: list[str]) -> BackendReport:
        results = [m for m in map(self.result_re.match, lines) if m]
        if not results:
            refused = [line for line in lines if _CHECK_FAILED_RE.search(line)]
            return BackendReport(refusal=quote(self.tool, refused) if refused else None)
        wanted = tool_argument(self.framework, cell.backend)
        suffix = _DEVICE_SUFFIX_RE.search(_LOCATION_RE.sub("", results[-1].group("head")))
        if suffix is not None and suffix["device"] != wanted:
            return BackendReport(fallback=f"{self.tool} ran on {suffix['device']}, not {wanted}")
        return BackendReport(
            run=accelerator_run(self.framework, cell.backend, precision=cell.precision)
        )

    def narrow(self, candidates: list[tuple[str, object]]) -> list[tuple[str, object]]:
        # Both the logcat/printf copies of one result carry the same label; keep the last.
        return candidates[-1:]


def parse_tnn_output_file(text: str) -> dict[str, np.ndarray]:
    """Read the file ``TNNTest -op`` writes: the number of outputs, one header per output
    (``name mat_type: T dims: K d1 .. dK``, or ``name K d1 .. dK`` in older builds), then the
    values of every output in header order, one per line (``%.6f``; integers for NC_INT32).

    Returns ``{name: array}`` in file order (TNN writes outputs sorted by name), float32 arrays
    (int32 for NC_INT32) shaped by the header dims. Raises :class:`ToolParseError`.
    """
    tool = "TNNTest"
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        raise ToolParseError(tool, "output count line", "the -op file is empty")
    n_outputs = int_or_none(lines[0])
    if n_outputs is None or n_outputs < 1 or n_outputs > len(lines) - 1:
        raise ToolParseError(tool, "output count line", f"first line {lines[0][:40]!r}")
    headers: list[tuple[str, list[int], int | None]] = []
    for line in lines[1 : 1 + n_outputs]:
        header = _parse_header(line)
        if header is None:
            raise ToolParseError(tool, "output header line", f"got {line[:80]!r}")
        if any(header[0] == seen[0] for seen in headers):
            raise ToolParseError(tool, "output header line", f"duplicate output {header[0]!r}")
        headers.append(header)
    values = lines[1 + n_outputs :]
    total = sum(math.prod(dims) for _, dims, _ in headers)
    if total != len(values):
        raise ToolParseError(
            tool, "output values", f"headers describe {total} values, the file has {len(values)}"
        )
    outputs: dict[str, np.ndarray] = {}
    offset = 0
    for name, dims, mat_type in headers:
        size = math.prod(dims)
        try:
            parsed = [parse_number(item) for item in values[offset : offset + size]]
        except ValueError as exc:
            raise ToolParseError(tool, "output values", str(exc)) from None
        offset += size
        if mat_type in _INT_MAT_TYPES:
            if not all(v.is_integer() and abs(v) < 2**31 for v in parsed):
                raise ToolParseError(tool, "output values", f"non-int32 value in {name!r}")
            array = np.asarray(parsed, dtype=np.float64).astype(np.int32)
        else:
            with np.errstate(over="ignore"):
                array = np.asarray(parsed, dtype=np.float64).astype(np.float32)
        outputs[name] = array.reshape(dims)
    return outputs


def _parse_header(line: str) -> tuple[str, list[int], int | None] | None:
    typed = _HEADER_TYPED_RE.match(line)
    if typed:
        name, mat_type = typed.group("name"), int_or_none(typed.group("type"))
        tokens = typed.group("dims").split()
        if not tokens:
            return None
        rank = int_or_none(tokens[0])
        dims = [int_or_none(t) for t in tokens[1:]]
        if rank is None or rank != len(dims) or any(d is None for d in dims):
            return None
        return name, [d for d in dims if d is not None], mat_type
    tokens = line.split()
    # Older header: name tokens, then the rank K, then K dims. The shortest name that leaves a
    # consistent "K d1 .. dK" tail wins ("out 2 1 10" is "out" with dims [1, 10]).
    for j in range(1, len(tokens)):
        rank = int_or_none(tokens[j])
        if rank is not None and rank == len(tokens) - 1 - j:
            dims = [int_or_none(t) for t in tokens[j + 1 :]]
            if any(d is None for d in dims):
                return None
            return " ".join(tokens[:j]), [d for d in dims if d is not None], None
    return None
