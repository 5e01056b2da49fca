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
from dataclasses import dataclass
from typing import ClassVar

from .base import NUMBER, NativeCell, SummaryLineAdapter

_RESULT_RE = re.compile(
    rf"^\[\s*-\s*\]\s*(?P<label>.*?)\s+max\s*=\s*(?P<max>{NUMBER})\s*ms\s+"
    rf"min\s*=\s*(?P<min>{NUMBER})\s*ms\s+avg\s*=\s*(?P<avg>{NUMBER})\s*ms\s*$",
    re.ASCII,
)
_LOOP_RE = re.compile(r"Benchmarking\.\.\.\s*loop\s*=\s*(\d+)", re.ASCII)


@dataclass(kw_only=True, eq=False)
class MnnBenchmarkAdapter(SummaryLineAdapter):
    framework = "mnn"
    binary = "benchmark.out"
    result_re = _RESULT_RE
    count_re = _LOOP_RE
    result_line = "'[ - ] <model>  max = ... ms  min = ... ms  avg = ... ms' line"

    #: benchmark.out precision codes (MNN::BackendConfig::PrecisionMode).
    PRECISION_CODES: ClassVar[dict[str, str]] = {"fp32": "0", "fp16": "2"}

    forward_type: int = 0

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

    def narrow(self, candidates: list[tuple[str, object]]) -> list[tuple[str, object]]:
        # A quant-<name> line is the same model run quantized: not a second model.
        plain = [c for c in candidates if not c[0].startswith("quant-")]
        return plain or candidates
