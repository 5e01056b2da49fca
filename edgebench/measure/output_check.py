"""Does a framework compute what ONNX Runtime computes? Checked before any latency counts."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from edgebench.planning.config import DEFAULT_TOLERANCE
from edgebench.runners.protocol import SPEC_SCHEMA
from edgebench.statuses import Status

if TYPE_CHECKING:
    from edgebench.lab.device import Device as RunnerHost
    from edgebench.planning.cells import Cell


@dataclass
class OutputComparison:
    name: str
    reference_name: str
    shape: list[int]
    max_abs_diff: float
    rel_error: float
    cosine: float
    top1_agreement: float


@dataclass
class OutputCheck:
    reference: str
    tolerance: float
    passed: bool
    max_abs_diff: float | None
    rel_error: float | None
    cosine: float | None
    top1_agreement: float | None
    outputs: list[OutputComparison] = field(default_factory=list)
    problem: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class ReferenceUnavailable(Exception):
    """The ONNX Runtime reference could not be computed; the message says why."""


class ReferenceOutputs:
    """ONNX Runtime on the host, one thread, the same seeded inputs the runner builds.

    Computed by the runner in a subprocess (never imported here: onnxruntime writes a device id
    into $HOME on import, and the runner has a private HOME), and cached per model and input.
    """

    def __init__(self, runner: RunnerHost | None = None) -> None:
        self._runner = runner
        self._cache: dict[tuple, tuple[list[str], list[np.ndarray]]] = {}
        self._lock = threading.Lock()
        self.version = ""

    def outputs(
        self, onnx_path: Path, inputs: Sequence[dict[str, Any]], seed: int
    ) -> tuple[list[str], list[np.ndarray]]:
        key = (str(onnx_path), repr(list(inputs)), seed)
        with self._lock:  # device workers share one reference per model
            if key not in self._cache:
                self._cache[key] = self._compute(onnx_path, inputs, seed)
            return self._cache[key]

    def _compute(
        self, onnx_path: Path, inputs: Sequence[dict[str, Any]], seed: int
    ) -> tuple[list[str], list[np.ndarray]]:
        if self._runner is None:
            from edgebench.lab.device import LocalDevice

            self._runner = LocalDevice("reference")
        out_path = self._runner.output_path(f"reference-{abs(hash((str(onnx_path), seed))):x}")
        spec = {
            "schema": SPEC_SCHEMA,
            "model": str(onnx_path),
            "framework": "onnxruntime",
            "threads": 1,
            "warmup": 0,
            "iterations": 1,
            "min_time_s": 0.0,
            "inputs": list(inputs) or None,
            "seed": seed,
            "save_outputs": out_path,
        }
        try:
            outcome = self._runner.run_runner(spec, None, timeout=600.0)
            result = outcome.result or {}
            if result.get("status") != Status.OK:
                error = result.get("error") or {}
                raise ReferenceUnavailable(
                    "ONNX Runtime reference failed: "
                    + (error.get("message") or outcome.error or "no result")
                )
            self.version = str(result.get("framework_version") or "")
            local = self._runner.fetch_outputs(out_path)
            if local is None:
                raise ReferenceUnavailable("ONNX Runtime reference wrote no outputs")
            return load_saved_outputs(local)
        finally:
            self._runner.discard_outputs(out_path)


def _top1_agreement(out: np.ndarray, ref: np.ndarray) -> float:
    if ref.ndim == 0 or ref.size == 0:
        return 1.0
    rows_ref = ref.reshape(-1, ref.shape[-1])
    rows_out = out.reshape(-1, ref.shape[-1])
    return float(np.mean(np.argmax(rows_out, axis=1) == np.argmax(rows_ref, axis=1)))


def compare_arrays(name: str, ref_name: str, out: np.ndarray, ref: np.ndarray) -> OutputComparison:
    a = np.asarray(out, dtype=np.float64).reshape(ref.shape)
    b = np.asarray(ref, dtype=np.float64)
    diff = a - b
    ref_norm = float(np.linalg.norm(b))
    out_norm = float(np.linalg.norm(a))
    rel = float(np.linalg.norm(diff)) / max(ref_norm, 1e-12)
    cosine = float(np.dot(a.ravel(), b.ravel()) / max(ref_norm * out_norm, 1e-24))
    cosine = min(1.0, max(-1.0, cosine))  # rounding can land a hair outside [-1, 1]
    return OutputComparison(
        name=name,
        reference_name=ref_name,
        shape=list(ref.shape),
        max_abs_diff=float(np.max(np.abs(diff))) if diff.size else 0.0,
        rel_error=rel,
        cosine=cosine,
        top1_agreement=_top1_agreement(a, b),
    )


def check_outputs(
    names: Sequence[str],
    outputs: Sequence[np.ndarray],
    ref_names: Sequence[str],
    references: Sequence[np.ndarray],
    tolerance: float,
    reference_label: str,
) -> OutputCheck:
    """Match outputs to the reference by name, else by position; worst output decides."""
    comparisons: list[OutputComparison] = []
    problem = None
    by_name = dict(zip(names, outputs, strict=False))
    use_names = set(ref_names) <= set(by_name)
    for position, (ref_name, ref) in enumerate(zip(ref_names, references, strict=True)):
        if use_names:
            name, out = ref_name, by_name[ref_name]
        elif position < len(outputs):
            name, out = names[position], outputs[position]
        else:
            problem = f"the framework returned {len(outputs)} outputs, ONNX has {len(ref_names)}"
            break
        if np.asarray(out).size != np.asarray(ref).size:
            problem = (
                f"output {name} has shape {list(np.asarray(out).shape)}, "
                f"ONNX Runtime gives {list(np.asarray(ref).shape)}"
            )
            break
        comparisons.append(compare_arrays(name, ref_name, np.asarray(out), np.asarray(ref)))
    if problem or not comparisons:
        nan = float("nan")
        return OutputCheck(
            reference_label,
            tolerance,
            False,
            nan,
            nan,
            nan,
            nan,
            comparisons,
            problem or "no outputs to compare",
        )
    worst_rel = max(c.rel_error for c in comparisons)
    return OutputCheck(
        reference=reference_label,
        tolerance=tolerance,
        passed=bool(worst_rel <= tolerance),
        max_abs_diff=max(c.max_abs_diff for c in comparisons),
        rel_error=worst_rel,
        cosine=min(c.cosine for c in comparisons),
        top1_agreement=min(c.top1_agreement for c in comparisons),
        outputs=comparisons,
    )


def load_saved_outputs(path: Path) -> tuple[list[str], list[np.ndarray]]:
    with np.load(path, allow_pickle=False) as data:
        names = [str(n) for n in data["__names__"]]
        outputs = [data[f"output_{i}"] for i in range(len(names))]
    return names, outputs


@dataclass
class CheckSettings:
    """How outputs are checked against ONNX Runtime: the relative L2 error allowed per
    precision, the reference (computed once per model and input), and the input seed."""

    tolerance: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_TOLERANCE))
    reference: ReferenceOutputs = field(default_factory=ReferenceOutputs)
    seed: int = 0


def compare_with_reference(
    cell: Cell, result_file: Path | None, checks: CheckSettings
) -> OutputCheck | None:
    """The cell's saved outputs against ONNX Runtime on the host; None without a reference."""
    reference = cell.model.reference
    if reference is None or result_file is None:
        return None
    names, outputs = load_saved_outputs(result_file)
    ref_names, ref_outputs = checks.reference.outputs(reference, cell.inputs or [], checks.seed)
    tolerance = checks.tolerance.get(cell.precision, checks.tolerance["fp32"])
    label = f"onnxruntime {checks.reference.version} on the host"
    return check_outputs(names, outputs, ref_names, ref_outputs, tolerance, label)
