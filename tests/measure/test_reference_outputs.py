"""The ONNX Runtime reference is the cell's own spec with the reference's overrides: its ONNX
model and inputs, fp32 ONNX Runtime, one thread, one plain inference."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from fakes.local_cells import onnxruntime_cells

from edgebench.lab.device import RunnerOutcome
from edgebench.lab.transports.base import CommandResult
from edgebench.measure.reference_outputs import REFERENCE_TIMEOUT_S, ReferenceOutputs
from edgebench.planning.cells import Cell
from edgebench.planning.config import TimingConfig
from edgebench.runners.protocol import RESULT_SCHEMA


class SpecKeeper:
    """The host the reference runs on, reduced to what it is asked: keeps each spec and writes
    one output named ``y``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.runs: list[tuple[dict[str, Any], Any, float]] = []

    def output_path(self, name: str) -> str:
        return str(self.folder / f"{name}.npz")

    def run_runner(self, spec: dict[str, Any], cores: Any, timeout: float) -> RunnerOutcome:
        self.runs.append((spec, cores, timeout))
        target = spec["save_outputs"] or spec["save_eval_outputs"]
        np.savez(target, __names__=np.array(["y"]), output_0=np.arange(3.0))
        result = {"schema": RESULT_SCHEMA, "status": "ok", "framework_version": "1.99"}
        return RunnerOutcome(result, CommandResult(0, "", ""))

    def fetch_outputs(self, path: str) -> Path:
        return Path(path)

    def discard_outputs(self, path: str) -> None:
        Path(path).unlink()


def _busy_cell(model_path: Path, reference: Path) -> Cell:
    """A cell with every setting the reference must not take over."""
    timing = TimingConfig(warmup=7, iterations=50, min_time_s=3.0)
    (cell,) = onnxruntime_cells(model_path, timing=timing)
    return replace(
        cell,
        model=replace(cell.model, path=model_path.with_suffix(".param"), reference=reference),
        framework="ncnn",
        precision="fp16",
        threads=4,
        cores=[0],
        concurrency=2,
        instances=2,
        profile_ops=5,
        shape_from=[{"name": "x", "shape": [1, 3, 16, 16]}],
    )


def test_the_reference_runs_the_cells_inputs_through_fp32_onnx_runtime_once(tmp_path, conv_model):
    host = SpecKeeper(tmp_path)
    reference = ReferenceOutputs(host)
    cell = _busy_cell(conv_model, conv_model)
    names, outputs = reference.outputs(cell, seed=7)
    assert names == ["y"] and outputs[0].tolist() == [0.0, 1.0, 2.0]
    assert reference.version == "1.99"

    ((spec, cores, timeout),) = host.runs
    assert cores is None and timeout == REFERENCE_TIMEOUT_S
    assert spec["model"] == str(conv_model) and spec["framework"] == "onnxruntime"
    assert spec["inputs"] == cell.inputs and spec["seed"] == 7
    ran = {key: spec[key] for key in ("precision", "threads", "cores", "concurrency")}
    assert ran == {"precision": "fp32", "threads": 1, "cores": None, "concurrency": 1}
    assert (spec["warmup"], spec["iterations"], spec["min_time_s"]) == (0, 1, 0.0)
    assert spec["instances"] == 1 and spec["profile_ops"] == 0 and spec["telemetry"] is None
    assert spec["shape_change_from"] is None and spec["input_file"] is None
    assert spec["save_outputs"] and not spec.get("eval_file")


def test_the_reference_is_computed_once_per_model_and_input(tmp_path, conv_model):
    host = SpecKeeper(tmp_path)
    reference = ReferenceOutputs(host)
    cell = _busy_cell(conv_model, conv_model)
    reference.outputs(cell, seed=7)
    reference.outputs(replace(cell, framework="openvino", threads=2), seed=7)
    assert len(host.runs) == 1  # the same ONNX model and inputs: the cached outputs
    reference.outputs(cell, seed=8)
    evaluation = tmp_path / "eval.npz"
    reference.outputs(cell, seed=7, eval_file=evaluation)
    assert len(host.runs) == 3
    spec = host.runs[-1][0]
    assert spec["eval_file"] == str(evaluation) and spec["save_eval_outputs"]
    assert spec["save_outputs"] is None
