"""MNN INT8: full INT8 through MNN's calibration tool, and the runtime check of what runs in int8.

The calibration tool (``_tools.mnnquant``, the ``quantized.out`` of MNN's C++ build) reads the
calibration set as "sequence" input: one folder per sample holding ``<input name>.txt`` (the
tensor's values, whitespace separated) and ``input.json`` (every input's shape). Written with 9
significant digits, each float32 value parses back to the same float32, so MNN is calibrated on
exactly edgebench's tensors. The model is calibrated with both of MNN's usable activation-range
methods (KL, EMA) and the one whose outputs match the fp32 MNN model better on the calibration
set is kept: neither wins on every model (docs/converters.md, "MNN INT8").
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .base import ConversionError, ConversionOptions, read_onnx
from .calibration_data import check_inputs, iter_samples, load_calibration
from .isolation import ToolRun, isolated_env, last_line, run_tool

#: Part of the int8 artifacts' cache key: bump when the quantization steps change.
QUANT_VERSION = "edgebench-mnnquant-1"
WEIGHTS_METHOD = "weight-only int8 (MNNConvert --weightQuantBits 8)"
WEIGHTS_GRANULARITY = "per-channel asymmetric int8 weights, float activations"
_ACTIVATIONS = {"KL": "symmetric", "EMA": "asymmetric"}
# ADMM is left out: in sequence mode MNN 3.6.1 computes its scales from the last sample only.
_METHODS = ("KL", "EMA")
_CONFIG = {
    "weight_quantize_method": "MAX_ABS",
    "quant_bits": 8,
    "input_type": "sequence",
    # No batch_size: in sequence mode MNN's EMA pass keeps only the last sample of a batch.
    "debug": False,
}
# What MNN's calibration prints when it carries on with missing data instead of stopping.
_TOOL_ERRORS = ("TESTERROR", "Can't open", "Invalid json", "not supported", "failed")
# MNN switches KL to EMA by itself for a model that keeps BatchNorm ops.
_SWITCHED_TO_EMA = "use EMA quantize method instead"
# Casts the runtime puts around int8 regions: neither quantized compute nor float fallback.
_CASTS = ("FloatToInt8", "Int8ToFloat")
_MARK = "EDGEBENCH_MNN_RUN "
_SCORED_SAMPLES = 16  # enough to rank two methods; bounds the time on big sets

_QUANT_SCRIPT = """
import sys
import _tools
_tools.mnnquant(["mnnquant", sys.argv[1], sys.argv[2], sys.argv[3]])
"""

# Runs the first samples of an .npz set through each model with the MNN CPU runtime. The runtime
# decides per operator whether it runs in int8 and tags those operators' type in the callback
# info ("Convolution [ DT_INT8 ] "). SQNR of every model's outputs against the first model's.
_RUN_SCRIPT = """
import json, sys
import numpy as np
import MNN
with np.load(sys.argv[1]) as data:
    arrays = {name: data[name].astype(np.float32) for name in data.files}
count = min(int(sys.argv[2]), next(iter(arrays.values())).shape[0])
caffe = MNN.Tensor_DimensionType_Caffe

def run(path):
    interpreter = MNN.Interpreter(path)
    session = interpreter.createSession({"numThread": 1, "precision": "normal", "backend": "CPU"})
    inputs = interpreter.getSessionInputAll(session)
    for name, value in arrays.items():
        interpreter.resizeTensor(inputs[name], tuple(value.shape[1:]))
    interpreter.resizeSession(session)
    ops, results = {}, []
    def before(tensors, info):
        return True
    def after(tensors, info):
        kind, _, tag = info.getType().partition(" [")
        ops.setdefault(kind.strip(), set()).add("int8" if "INT8" in tag else "float")
        return True
    for i in range(count):
        for name, value in arrays.items():
            host = MNN.Tensor(value.shape[1:], MNN.Halide_Type_Float, value[i].copy(), caffe)
            inputs[name].copyFrom(host)
        if i == 0:
            interpreter.runSessionWithCallBackInfo(session, before, after)
        else:
            interpreter.runSession(session)
        for tensor in interpreter.getSessionOutputAll(session).values():
            shape = tuple(tensor.getShape())
            host = MNN.Tensor(shape, MNN.Halide_Type_Float, np.zeros(shape, np.float32), caffe)
            tensor.copyToHostTensor(host)
            results.append(np.array(host.getNumpyData(), dtype=np.float64).reshape(-1))
    return ops, np.concatenate(results)

report, ref = [], None
for path in sys.argv[3:]:
    ops, out = run(path)
    ref = out if ref is None else ref
    noise = float(np.square(out - ref).sum())
    sqnr = 10 * np.log10(float(np.square(ref).sum()) / noise) if noise > 0 else 200.0
    report.append({
        "int8": sorted(k for k, v in ops.items() if "int8" in v),
        "float": sorted(k for k, v in ops.items() if "float" in v),
        "finite": bool(np.isfinite(out).all()),
        "sqnr": round(min(sqnr, 200.0), 2) if np.isfinite(sqnr) else -200.0,
    })
print("EDGEBENCH_MNN_RUN " + json.dumps(report))
"""


def _run(script: str, args: list[str], cwd: Path, timeout: float) -> ToolRun:
    from edgebench.paths import cache_dir

    env = isolated_env(cache_dir() / "tool-home")
    return run_tool([sys.executable, "-c", script, *args], cwd=cwd, env=env, timeout=timeout)


def _fail(problem: str, log: str, fix: str = "") -> ConversionError:
    fix = fix or "check the calibration set, or use --precision int8-weights"
    return ConversionError("failed", f"MNN INT8 calibration {problem}; {fix}", log)


def onnx_input_shapes(onnx_path: Path) -> dict[str, list[int]]:
    """The model's graph inputs (initializers excluded), unknown dimensions as -1."""
    graph = read_onnx(onnx_path).graph
    weights = {init.name for init in graph.initializer}
    return {
        v.name: [d.dim_value if d.dim_value > 0 else -1 for d in v.type.tensor_type.shape.dim]
        for v in graph.input
        if v.name not in weights
    }


def check_against_model(
    arrays: dict[str, np.ndarray], wanted: dict[str, list[int]], path: object
) -> None:
    """A ConversionError ("failed") unless the set holds exactly the model's inputs, finite."""
    fix = "rebuild the calibration set for this model"
    check_inputs(arrays, wanted, path)
    extra = sorted(set(arrays) - set(wanted))
    if extra:
        raise ConversionError(
            "failed", f"calibration set {path} has arrays for unknown inputs {extra}; {fix}"
        )


def write_samples(arrays: dict[str, np.ndarray], folder: Path) -> int:
    """MNN's sequence input: one folder per sample with ``<input>.txt`` and ``input.json``."""
    count = 0
    for count, feed in enumerate(iter_samples(arrays), start=1):
        sample = folder / f"{count - 1:06d}"
        sample.mkdir(parents=True)
        for name, value in feed.items():
            if "/" in name or name.startswith("."):
                raise ConversionError("failed", f"MNN calibration cannot use input name {name!r}")
            floating = value.dtype.kind in "fc"
            flat = value.astype(np.float32 if floating else np.int64).reshape(1, -1)
            np.savetxt(sample / f"{name}.txt", flat, fmt="%.9g" if floating else "%d")
        # Without input.json the 3.6.1 tool crashes: it never builds the input it says it
        # defaults to.
        shapes = [{"name": name, "shape": list(value.shape)} for name, value in feed.items()]
        (sample / "input.json").write_text(json.dumps({"inputs": shapes}))
    return count


def run_models(models: list[Path], samples: Path, work: Path, timeout: float) -> list[dict]:
    """For each model, what the MNN CPU runtime ran: op types in ``int8`` and in ``float``
    (casts left out), ``finite`` outputs, output ``sqnr`` in dB against the first model."""
    run = _run(_RUN_SCRIPT, [str(samples), str(_SCORED_SAMPLES), *map(str, models)], work, timeout)
    lines = [ln for ln in run.log.splitlines() if ln.startswith(_MARK)]
    if run.returncode != 0 or not lines:
        raise ConversionError(
            "failed",
            f"the MNN runtime cannot run the quantized model ({last_line(run.log)}); "
            "use --precision fp32 or fp16",
            run.log,
        )
    report = json.loads(lines[-1][len(_MARK) :])
    for entry in report:
        entry["int8"] = [op for op in entry["int8"] if op not in _CASTS]
        entry["float"] = [op for op in entry["float"] if op not in _CASTS]
    return report


def _calibrate(method: str, fp32: Path, work: Path, count: int, timeout: float) -> ToolRun:
    config = work / f"quant-{method}.json"
    settings = {**_CONFIG, "feature_quantize_method": method}
    settings.update(path=str(work / "samples"), used_sample_num=count)
    config.write_text(json.dumps(settings))
    # One core; about 0.5 s (mobilenetv2) to 5 s (resnet50) per 224x224 sample on x86.
    args = [str(fp32), str(work / f"{method}.mnn"), str(config)]
    return _run(_QUANT_SCRIPT, args, work, timeout * (1 + count / 100))


def _problem(run: ToolRun, output: Path) -> str | None:
    if run.timed_out:
        return f"timed out after {run.duration_s:.0f} s"
    if run.returncode != 0:
        return f"crashed (exit {run.returncode}): {last_line(run.log)}"
    errors = [ln.strip() for ln in run.log.splitlines() if any(e in ln for e in _TOOL_ERRORS)]
    if errors or not output.is_file():
        return f"failed: {(errors or [last_line(run.log)])[0][:200]}"
    return None


def quantize_int8(
    onnx_path: Path,
    target: Path,
    options: ConversionOptions,
    to_fp32: Callable[[Path], str],
    timeout: float,
) -> tuple[str, dict[str, object]]:
    """Write the calibrated full-INT8 model to ``target``; (the tools' log, the record's quant).

    ``to_fp32(path)`` writes the fp32 MNN model the calibration starts from and returns its log.
    """
    arrays = load_calibration(options)
    check_against_model(arrays, onnx_input_shapes(onnx_path), options.calibration)
    work = target.parent / "mnn-int8-work"
    work.mkdir()
    try:
        fp32 = work / "fp32.mnn"
        log = to_fp32(fp32)
        count = write_samples(arrays, work / "samples")
        made: dict[str, Path] = {}
        problems: list[str] = []
        for method in _METHODS:
            run = _calibrate(method, fp32, work, count, timeout)
            log += f"\n--- mnnquant {method}, {count} samples ---\n{run.log}"
            problem = _problem(run, work / f"{method}.mnn")
            if problem:
                problems.append(f"{method} {problem}")
            else:
                effective = "EMA" if _SWITCHED_TO_EMA in run.log else method
                made[effective] = work / f"{method}.mnn"
        if not made:
            raise _fail(problems[0], log)
        samples = Path(str(options.calibration)).resolve()  # load_calibration checked it is set
        report = run_models([fp32, *made.values()], samples, work, timeout)
        scores = dict(zip(made, report[1:], strict=True))
        log += "\nedgebench: SQNR against fp32 MNN on the calibration set: " + ", ".join(
            f"{m} {s['sqnr']} dB" for m, s in scores.items()
        )
        usable = {m: s for m, s in scores.items() if s["int8"] and s["finite"]}
        if not usable:
            first = next(iter(scores.values()))
            if first["int8"]:
                raise _fail("produced models whose outputs are NaN or inf", log)
            ops = ", ".join(first["float"])
            fix = "MNN has no int8 kernel for them: use --precision int8-weights or fp16"
            raise _fail(f"left every operator in float ({ops})", log, fix)
        best = max(usable, key=lambda m: usable[m]["sqnr"])
        os.replace(made[best], target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ranked = (
        f" (the better of {' and '.join(made)} on the calibration set)" if len(made) > 1 else ""
    )
    return log, {
        "method": f"MNN mnnquant, {best} activation ranges{ranked}, MAX_ABS weights",
        "granularity": "per-channel symmetric int8 weights, "
        f"per-tensor {_ACTIVATIONS[best]} int8 activations",
        "fp32_fallback_ops": usable[best]["float"],
    }


def weight_only_quant(
    model: Path, onnx_path: Path, options: ConversionOptions, timeout: float
) -> dict[str, object]:
    """The record's quant for a ``--weightQuantBits 8`` model: every op runs in float."""
    shapes = {**onnx_input_shapes(onnx_path), **options.input_shapes}
    fallback: list[str] = []
    if all(d > 0 for shape in shapes.values() for d in shape):
        work = model.parent / "mnn-probe-work"
        work.mkdir()
        try:
            zeros = work / "zeros.npz"
            arrays = {n: np.zeros([1, *shape], np.float32) for n, shape in shapes.items()}
            np.savez(zeros, **arrays)  # type: ignore[arg-type]  # stub: keywords as options
            fallback = run_models([model], zeros, work, timeout)[0]["float"]
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return {
        "method": WEIGHTS_METHOD,
        "granularity": WEIGHTS_GRANULARITY,
        "fp32_fallback_ops": fallback,
    }
