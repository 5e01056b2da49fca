"""ONNX Runtime's outputs for a cell's inputs on the host: what the output check and the
quantized cells' accuracy compare a framework's outputs with."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from edgebench.planning.cells import Cell, correctness_timing
from edgebench.planning.config import TimingConfig
from edgebench.runners.protocol.run_result import RunResult
from edgebench.statuses import Status

if TYPE_CHECKING:
    from edgebench.lab.device import Device as RunnerHost

#: How long the reference's one inference (or evaluation set) may take.
REFERENCE_TIMEOUT_S = 600.0


class ReferenceUnavailable(Exception):
    """The ONNX Runtime reference could not be computed; the message says why."""


def reference_result(raw: dict[str, Any] | None, name: str) -> RunResult | None:
    """The reference runner's result, typed; a malformed one is unavailable, saying which field."""
    if raw is None:
        return None
    try:
        return RunResult.from_json(raw)
    except ValueError as exc:
        raise ReferenceUnavailable(
            f"{name} failed: its runner's result is malformed: {exc}"
        ) from None


def reference_cell(cell: Cell) -> Cell:
    """``cell`` as the reference runs it: fp32 ONNX Runtime on the cell's ONNX model with the
    cell's inputs, one thread, one plain inference (no telemetry, instances or profiling)."""
    if cell.model.reference is None:
        raise ValueError(f"{cell.model.name} has no ONNX reference")
    # A new Cell, not a copy: every part the reference does not use keeps Cell's default.
    return Cell(
        device=cell.device,
        model=replace(cell.model, path=cell.model.reference, format="onnx", companions=[]),
        framework="onnxruntime",
        precision="fp32",
        threads=1,
        cores_selection="all",
        cores=None,
        concurrency=1,
        inputs=cell.inputs,
        timing=correctness_timing(TimingConfig(timeout_s=REFERENCE_TIMEOUT_S)),
        correctness_only=True,
    )


def litert_cell(cell: Cell) -> Cell:
    """``reference_cell`` on LiteRT with the original .tflite of a model given as one: what
    its ONNX twin must match before it is a reference (``twin_check``)."""
    origin = cell.model.tflite
    if origin is None:
        raise ValueError(f"{cell.model.name} was not given as a .tflite")
    reference = reference_cell(cell)
    model = replace(reference.model, path=origin.path, format="tflite", sha256=origin.sha256)
    return replace(reference, model=model, framework="tflite")


def load_saved_outputs(path: Path) -> tuple[list[str], list[np.ndarray]]:
    """The names and arrays of an outputs ``.npz`` the runner wrote."""
    with np.load(path, allow_pickle=False) as data:
        names = [str(n) for n in data["__names__"]]
        outputs = [data[f"output_{i}"] for i in range(len(names))]
    return names, outputs


class ReferenceOutputs:
    """ONNX Runtime on the host, one thread, the same inputs the runner feeds (seeded, or the
    prepared ``--input`` file).

    Computed by the runner in a subprocess (never imported here: onnxruntime writes a device id
    into $HOME on import, and the runner has a private HOME), and cached per model and input.
    """

    def __init__(self, runner: RunnerHost | None = None) -> None:
        self._runner = runner
        self._cache: dict[tuple, tuple[list[str], list[np.ndarray]]] = {}
        self._lock = threading.Lock()
        self.version = ""
        #: LiteRT's version, once it has run a .tflite original (``litert=True``).
        self.litert_version = ""
        #: The twin checks made (``twin_check``), by model and input.
        self.twin_checks: dict[tuple, object] = {}

    def __reduce__(self) -> tuple:
        # Sent to another host (edgebench run --cluster): that host computes its own reference.
        return (type(self), ())

    def outputs(
        self,
        cell: Cell,
        seed: int,
        input_file: Path | None = None,
        eval_file: Path | None = None,
        *,
        litert: bool = False,
    ) -> tuple[list[str], list[np.ndarray]]:
        """The reference outputs for ``cell``'s seeded inputs or ``input_file``; with
        ``eval_file``, those of each of its samples, stacked on a leading axis. ``litert``:
        those of LiteRT on the original .tflite of a model given as one."""
        reference = litert_cell(cell) if litert else reference_cell(cell)
        key = (
            str(reference.model.path),
            repr(list(reference.inputs)),
            seed,
            str(input_file),
            str(eval_file),
        )
        with self._lock:  # device workers share one reference per model
            if key not in self._cache:
                self._cache[key] = self._compute(reference, seed, input_file, eval_file)
            return self._cache[key]

    def _compute(
        self, reference: Cell, seed: int, input_file: Path | None, eval_file: Path | None
    ) -> tuple[list[str], list[np.ndarray]]:
        if self._runner is None:
            from edgebench.lab.device import LocalDevice

            self._runner = LocalDevice("reference")
        onnx_path = reference.model.path
        out_path = self._runner.output_path(
            f"reference-{abs(hash((str(onnx_path), seed, str(input_file), str(eval_file)))):x}"
        )
        spec = reference.spec(
            seed,
            save_outputs=None if eval_file is not None else out_path,
            input_file=str(input_file) if input_file is not None else None,
        )
        if eval_file is not None:
            spec["eval_file"] = str(eval_file)
            spec["save_eval_outputs"] = out_path
        try:
            outcome = self._runner.run_runner(spec, None, timeout=reference.timeout_s)
            ort = reference.framework == "onnxruntime"
            name = "ONNX Runtime reference" if ort else "LiteRT on the original .tflite"
            result = reference_result(outcome.result, name)
            if result is None or result.status != Status.OK:
                said = result.error.message if result is not None and result.error else None
                raise ReferenceUnavailable(f"{name} failed: {said or outcome.error or 'no result'}")
            version = result.framework_version or ""
            if ort:
                self.version = version
            else:
                self.litert_version = version
            local = self._runner.fetch_outputs(out_path)
            if local is None:
                raise ReferenceUnavailable("ONNX Runtime reference wrote no outputs")
            return load_saved_outputs(local)
        finally:
            self._runner.discard_outputs(out_path)
