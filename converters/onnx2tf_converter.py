"""ONNX -> TFLite with onnx2tf, run from the ``tflite`` toolchain venv: the alternative to
edgebench's own writer (``--tflite-converter onnx2tf``), kept for comparison.

onnx2tf traps, each handled here: it rewrites its input in place (it gets a copy); it runs
``onnxsim`` by name (the venv's bin is first on PATH); for image inputs it downloads a
calibration file unless one is in the working directory (a seeded one is written there);
without ``-rtpo Erf`` an Erf-based GELU becomes a Flex op that LiteRT cannot run (and the
result is loaded once in LiteRT to catch any Flex op). It makes NCHW inputs NHWC: ``io.json``
records, per tensor, the TFLite name and shape and the transpose between the two layouts.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import ClassVar

import numpy as np

from .base import ConversionError, ConversionOptions
from .calibration_data import load_calibration
from .subprocess_tools import (
    ModelIO,
    StagedModel,
    TensorSpec,
    ToolchainConverter,
    check_run,
    known_shape,
    run_in_toolchain,
    tensor_entry,
    write_io_json,
)
from .tflite.float_ops import float_op_types
from .toolchains import toolchain_python

FILES = ["model.tflite", "io.json"]
CALIBRATION_FILE = "calibration_image_sample_data_20x128x128x3_float32.npy"
_NOT_IMPLEMENTED = re.compile(r"ERROR: (\S+) OP is not yet implemented")
_FLEX = re.compile(r"\bFlex(\w+)")
_FLEX_NOTE = " (it became a TensorFlow Flex op, which LiteRT cannot run)"

# Runs in the toolchain's Python: load the model in LiteRT, print its signature as JSON.
_INSPECT = """
import json, sys
from ai_edge_litert.interpreter import Interpreter
try:
    it = Interpreter(model_path=sys.argv[1])
    it.allocate_tensors()
    key = next(iter(it.get_signature_list()))
    runner = it.get_signature_runner(key)
    def describe(details):
        return {k: {"name": d["name"], "shape": [int(x) for x in d["shape"]],
                    "dtype": d["dtype"].__name__} for k, d in details.items()}
    result = {"ok": True, "signature": key, "inputs": describe(runner.get_input_details()),
              "outputs": describe(runner.get_output_details())}
except Exception as exc:
    result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
print("EDGEBENCH_INSPECT " + json.dumps(result))
"""


class Onnx2tfConverter(ToolchainConverter):
    format = "tflite"
    framework = "tflite"
    tool = "onnx2tf"
    precisions = ("fp32", "fp16", "int8")
    dynamic_note: ClassVar[str] = (
        "onnx2tf gets the model staged at fixed input shapes, and its NHWC transposes and "
        "reshapes are written for them"
    )
    _calibration: dict[str, np.ndarray] | None = None

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        self.last_quant = None
        self.check_dynamic(onnx_path, options)
        self._calibration = load_calibration(options) if options.precision == "int8" else None
        return super().convert(onnx_path, out_dir, options)

    def convert_staged(self, staged: StagedModel, out_dir: Path, precision: str) -> list[str]:
        _write_calibration(staged.work / CALIBRATION_FILE)
        args = ["-i", staged.path.name, "-o", "out", "-rtpo", "Erf"]
        if precision == "int8" and self._calibration is not None and staged.io is not None:
            args += ["-oiqt", "-qt", "per-channel"]
            args += _calibration_args(self._calibration, staged.io, staged.work)
        run = self.run_tool(args, staged)
        suffix = {"fp16": "float16", "int8": "integer_quant"}.get(precision, "float32")
        produced = staged.work / "out" / f"{staged.path.stem}_{suffix}.tflite"
        if not produced.is_file() or staged.io is None:
            raise ConversionError("failed", f"onnx2tf wrote no {produced.name}", run.log)
        signature = self._inspect(produced, staged.work, staged.io)
        entries = _io_entries(staged.io, signature)
        if precision == "int8":
            self.last_quant = {
                "method": "onnx2tf -oiqt (TensorFlow's converter), calibrated on edgebench's set",
                "granularity": "per-channel int8 weights, per-tensor int8 activations",
                "fp32_fallback_ops": float_op_types(produced.read_bytes()),
            }
        os.replace(produced, out_dir / "model.tflite")
        write_io_json(out_dir / "io.json", "tflite", *entries, signature=signature["signature"])
        return list(FILES)

    def unsupported_in(self, log: str, crashed: bool) -> str | None:
        found = _NOT_IMPLEMENTED.search(log)
        return found.group(1) if found else None

    def _inspect(self, model: Path, work: Path, io: ModelIO | None = None) -> dict:
        """The model's signature as LiteRT sees it; a Flex op is an unsupported op."""
        argv = [str(toolchain_python(self.toolchain)), "-I", "-c", _INSPECT, str(model)]
        run = run_in_toolchain(self.toolchain, argv, cwd=work, timeout=self.timeout_s)
        lines = [ln for ln in run.log.splitlines() if ln.startswith("EDGEBENCH_INSPECT ")]
        if not lines:
            check_run(run, "LiteRT check of the converted model", self.timeout_s)
            raise ConversionError("failed", "LiteRT check printed no result", run.log)
        result = json.loads(lines[-1].split(" ", 1)[1])
        if result["ok"]:
            return result
        flex = _FLEX.search(result["error"])
        log = f"{self.last_log}\n--- LiteRT check ---\n{run.log}"
        if flex:
            raise self.unsupported(flex.group(1), io, log, _FLEX_NOTE)
        raise ConversionError("failed", f"LiteRT cannot load the result: {result['error']}", log)


def _calibration_args(arrays: dict[str, np.ndarray], io: ModelIO, work: Path) -> list[str]:
    """``-cind NAME FILE MEAN STD`` per input: the samples in TensorFlow's layout (NHWC for
    images, batch axis dropped: onnx2tf calibrates one sample at a time), already normalised."""
    args: list[str] = []
    for index, spec in enumerate(io.inputs):
        samples = arrays[spec.name]
        batch_of_one = samples.ndim > 2 and samples.shape[1] == 1
        data = samples[:, 0] if batch_of_one else samples
        if data.ndim == 4:
            data = data.transpose(0, 2, 3, 1)
        path = work / f"calibration_{index}.npy"
        np.save(path, np.ascontiguousarray(data, np.float32))
        args += ["-cind", spec.name, path.name, "[[[[0.0]]]]", "[[[[1.0]]]]"]
    return args


def _write_calibration(path: Path) -> None:
    """What onnx2tf would otherwise download: 20 images 128x128x3 in [0, 1)."""
    data = np.random.default_rng(0).random((20, 128, 128, 3), dtype=np.float32)
    np.save(path, data)


def _io_entries(io: ModelIO, signature: dict) -> tuple[list[dict], list[dict]]:
    inputs = [
        _entry(spec, key, detail, is_input=True)
        for spec, (key, detail) in _match(io.inputs, signature["inputs"])
    ]
    outputs = [
        _entry(spec, key, detail, is_input=False)
        for spec, (key, detail) in _match(io.outputs, signature["outputs"])
    ]
    return inputs, outputs


def _entry(spec: TensorSpec, key: str, detail: dict, is_input: bool) -> dict:
    perm = _perm(spec, detail["shape"], is_input)
    return tensor_entry(spec, detail["name"], detail["shape"], perm, signature_key=key)


def _sanitize(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z]+", "_", name).strip("_").lower()


def _match(specs: list[TensorSpec], details: dict[str, dict]) -> list[tuple[TensorSpec, tuple]]:
    """Pair ONNX tensors with signature entries; onnx2tf turns ':' into '__' in names."""
    remaining = dict(details)
    pairs: list[tuple[TensorSpec, tuple]] = []
    unmatched: list[TensorSpec] = []
    for spec in specs:
        candidates = [spec.name, spec.name.replace(":", "__")]
        key = next((c for c in candidates if c in remaining), None)
        if key is None:
            same = [k for k in remaining if _sanitize(k) == _sanitize(spec.name)]
            key = same[0] if len(same) == 1 else None
        if key is None:
            unmatched.append(spec)
            continue
        pairs.append((spec, (key, remaining.pop(key))))
    if len(unmatched) == 1 and len(remaining) == 1:
        key, detail = remaining.popitem()
        pairs.append((unmatched.pop(), (key, detail)))
    if unmatched or remaining:
        raise ConversionError(
            "failed",
            f"cannot pair ONNX tensors {[s.name for s in unmatched]} with TFLite signature "
            f"entries {sorted(remaining)}",
        )
    order = {spec.name: i for i, spec in enumerate(specs)}
    return sorted(pairs, key=lambda pair: order[pair[0].name])


def _channels_last(rank: int) -> list[int] | None:
    return [0, *range(2, rank), 1] if rank >= 3 else None


def _perm(spec: TensorSpec, tflite_shape: list[int], is_input: bool) -> list[int] | None:
    """The axis order taking the ONNX layout to the TFLite one; None when they agree.

    onnx2tf makes every rank-3+ input channels-last and gives outputs back in ONNX layout, so
    a shape that reads the same both ways counts as transposed for inputs only.
    """
    if not known_shape(spec.shape):
        return None
    perm = _channels_last(len(spec.shape))
    channels_last = perm is not None and [spec.shape[i] for i in perm] == list(tflite_shape)
    same = list(spec.shape) == list(tflite_shape)
    if channels_last and (is_input or not same):
        return perm
    if same or not is_input:
        return None
    raise ConversionError(
        "failed", f"TFLite input {spec.name!r} has shape {tflite_shape}, ONNX {spec.shape}"
    )
