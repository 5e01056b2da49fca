"""MNN ``benchmark.out``.

Command::

    benchmark.out MODELS_FOLDER LOOPS WARMUP 0 THREADS PRECISION

forward type 0 is the CPU, and the registry's for an accelerator cell (3 OpenCL, 7 Vulkan,
2 CUDA); precision 0 ("normal": fp32 on the CPU, the tool prints "use fp32 inference") or 2
("low": fp16 where the build has MNN_ARM82 and the CPU supports it). MNN's GPU backends compute
in fp16 at "normal", so an fp32 cell on a GPU asks for 1 ("high"). The
trailing optional arguments (weight sparsity, sparse block, testQuantizedModel, enableKleidiAI)
keep their defaults, which also keeps the command valid for older builds that stop at
``precision``. Builds older than the ``warmup`` argument (2019: ``models_folder loop_count
forwardtype``) would read WARMUP as the forward type and are not supported.

benchmark.out benchmarks *every* file in MODELS_FOLDER whose name does not start with ``.``
(not only ``*.mnn``), so the cell's ``model_dir`` must hold the one ``.mnn`` file and nothing
else. Input shapes come from the model file (they cannot be set on the command line).

Output (stdout)::

    MNN benchmark
    Forward type: CPU thread=1 precision=0 sparsity=0 sparseBlockOC=1 testQuantizedModel=0 ...
    --------> Benchmarking... loop = 20, warmup = 5
    [-INFO-]: precision!=2, use fp32 inference.
    [ - ] tinyresnet.mnn              max =    2.871 ms  min =    1.973 ms  avg =    2.289 ms

Older builds print ``Forward type: **CPU** thread=4** precision=2`` and
``[ - ] resnet-v2-50.mnn max = 45.885ms min = 39.539ms avg = 40.194ms`` (no space before
``ms``). With testQuantizedModel=1 a second line per model is labelled ``quant-<name>``. Times
are milliseconds; only max, min and avg are printed. ``count`` is the ``loop`` of the
"Benchmarking..." line.

Accelerators (MNN source/core): a build without the backend prints ``Can't Find type=3
backend, use 0 instead`` and runs on the CPU; a backend whose runtime cannot start (no OpenCL
library, no device) prints ``OpenCL init error, fallback ...`` or ``Can't create Runtime:
OpenCL`` and runs on the CPU or stops. Either is read as a fallback (with a result) or a
refusal (without). The device's name is not printed in release builds; the API is the
registry's, the precision what the cell asked for. These lines go through MNN_PRINT, which
an Android build with MNN_USE_LOGCAT (CMake's default there; MNN's own command-line build
scripts turn it off) sends to logcat under ``MNNJNI``: construct the adapter with
``android=True`` for an accelerator cell on a phone and pass the dump as ``logcat``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from edgebench.compute_backends import CPU

from .accelerator import BackendReport, accelerator_run, quote, tool_argument
from .base import NUMBER, SummaryLineAdapter, ToolCell

_RESULT_RE = re.compile(
    rf"^\[\s*-\s*\]\s*(?P<label>.*?)\s+max\s*=\s*(?P<max>{NUMBER})\s*ms\s+"
    rf"min\s*=\s*(?P<min>{NUMBER})\s*ms\s+avg\s*=\s*(?P<avg>{NUMBER})\s*ms\s*$",
    re.ASCII,
)
_LOOP_RE = re.compile(r"Benchmarking\.\.\.\s*loop\s*=\s*(\d+)", re.ASCII)
_FALLBACK_RE = re.compile(
    r"Can't Find type=\d+ backend, use \d+ instead|Can't create Runtime: \S+|"
    r"OpenCL init error, fallback|Create Runtime failed|Create Runtime Failed",
    re.ASCII,
)


@dataclass(kw_only=True, eq=False)
class MnnBenchmarkAdapter(SummaryLineAdapter):
    framework = "mnn"
    binary = "benchmark.out"
    result_re = _RESULT_RE
    count_re = _LOOP_RE
    result_line = "'[ - ] <model>  max = ... ms  min = ... ms  avg = ... ms' line"
    no_op_profile = (
        "MNN's benchmark.out prints only whole-model min/max/avg "
        "(per-op totals come from its separate timeProfile.out tool)"
    )

    logcat_tag = "MNNJNI"
    #: benchmark.out precision codes (MNN::BackendConfig::PrecisionMode) on the CPU and on a GPU.
    PRECISION_CODES: ClassVar[dict[str, str]] = {"fp32": "0", "fp16": "2"}
    GPU_PRECISION_CODES: ClassVar[dict[str, str]] = {"fp32": "1", "fp16": "2"}

    #: On Android: read MNN's messages from logcat (see the module docs).
    android: bool = False

    @classmethod
    def for_cell(cls, backend: str, android: bool) -> MnnBenchmarkAdapter:
        # MNN's backend messages go to logcat on Android; a CPU cell needs none of them.
        return cls(android=android and backend != CPU)

    def needs_logcat(self) -> bool:
        return self.android

    def command(self, binary_path: str, cell: ToolCell) -> list[str]:
        forward = tool_argument(self.framework, cell.backend)
        codes = self.PRECISION_CODES if forward is None else self.GPU_PRECISION_CODES
        return [
            binary_path,
            cell.model_dir,
            str(cell.iterations),
            str(cell.warmup),
            forward or "0",
            str(cell.threads),
            codes[cell.precision],
        ]

    def accelerator_lines(self, cell: ToolCell, lines: list[str]) -> BackendReport:
        words = [line for line in lines if _FALLBACK_RE.search(line)]
        if not any(self.result_re.match(line) for line in lines):
            return BackendReport(refusal=quote(self.tool, words) if words else None)
        if words:
            return BackendReport(fallback=quote(self.tool, words))
        return BackendReport(
            run=accelerator_run(self.framework, cell.backend, precision=cell.precision)
        )

    def narrow(self, candidates: list[tuple[str, object]]) -> list[tuple[str, object]]:
        # A quant-<name> line is the same model run quantized: not a second model.
        plain = [c for c in candidates if not c[0].startswith("quant-")]
        return plain or candidates
