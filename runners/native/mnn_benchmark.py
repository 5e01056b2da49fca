"""MNN ``benchmark.out``.

Command::

    benchmark.out MODELS_FOLDER LOOPS WARMUP 0 THREADS PRECISION

forward type 0 is the CPU; precision 0 ("normal": fp32 on the CPU, the tool prints "use fp32
inference") or 2 ("low": fp16 where the build has MNN_ARM82 and the CPU supports it). The
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
"""

from __future__ import annotations

import re
from typing import ClassVar

from .base import (
    NUMBER,
    NativeAdapter,
    NativeCell,
    NativeParseError,
    NativeResult,
    finite_or_none,
    int_or_none,
    streams,
)

_RESULT_RE = re.compile(
    rf"^\[\s*-\s*\]\s*(?P<label>.*?)\s+max\s*=\s*(?P<max>{NUMBER})\s*ms\s+"
    rf"min\s*=\s*(?P<min>{NUMBER})\s*ms\s+avg\s*=\s*(?P<avg>{NUMBER})\s*ms\s*$",
    re.ASCII,
)
_LOOP_RE = re.compile(r"Benchmarking\.\.\.\s*loop\s*=\s*(\d+)", re.ASCII)


class MnnBenchmarkAdapter(NativeAdapter):
    framework = "mnn"
    binary = "benchmark.out"
    tool = "benchmark.out"

    #: benchmark.out precision codes (MNN::BackendConfig::PrecisionMode).
    PRECISION_CODES: ClassVar[dict[str, str]] = {"fp32": "0", "fp16": "2"}

    def __init__(self, *, forward_type: int = 0, env: dict[str, str] | None = None) -> None:
        super().__init__(env=env)
        self.forward_type = forward_type

    def command(self, binary_path: str, cell: NativeCell) -> list[str]:
        return [
            binary_path,
            cell.model_dir,
            str(cell.iterations),
            str(cell.warmup),
            str(self.forward_type),
            str(cell.threads),
            self.PRECISION_CODES[cell.precision],
        ]

    def parse(
        self, stdout: str, stderr: str = "", logcat: str = "", *, model_path: str | None = None
    ) -> NativeResult:
        missing = "'[ - ] <model>  max = ... ms  min = ... ms  avg = ... ms' line"
        for lines in streams(stdout, stderr, logcat):
            candidates = []
            loop_count = None
            loop_line = None
            for line in lines:
                loop = _LOOP_RE.search(line)
                if loop:
                    loop_count, loop_line = int_or_none(loop.group(1)), line
                    continue
                match = _RESULT_RE.match(line)
                if match:
                    candidates.append((match.group("label"), (match, line)))
            if not candidates:
                continue
            if model_path is None:
                # A quant-<name> line is the same model run quantized: not a second model.
                plain = [c for c in candidates if not c[0].startswith("quant-")]
                candidates = plain or candidates
            match, line = self._select(candidates, model_path, missing)  # type: ignore[misc]
            result = NativeResult(
                tool=self.tool,
                count=loop_count,
                min_ms=finite_or_none(match.group("min")),
                max_ms=finite_or_none(match.group("max")),
                avg_ms=finite_or_none(match.group("avg")),
                raw_lines=[x for x in (loop_line, line) if x is not None],
            )
            if result.avg_ms is None and result.min_ms is None:
                raise NativeParseError(self.tool, missing, "no finite timings")
            return result.finish()
        raise NativeParseError(self.tool, missing)
