"""edgebench-native with TNN (runners/native_runner/backends/tnn.cpp): the TNN files edgebench's
own writer makes, run in real TNN, judged by the output check's fp32 rule against ONNX Runtime.

- the four built-in models and PaddleOCR's two real exports on TNN's X86 device;
- one small graph per layer type the writer emits (fakes/tnn_layers.py), in the writer's NumPy
  executor, in real TNN and in ONNX Runtime, on X86 and on TNN's ARM device (the aarch64 build
  under qemu-user, fp32 and its fp16 kernels); the table of their differences is printed at the
  end of the module;
- TNN through `edgebench run`: on this host (runner "edgebench-native", and "auto", which
  measures TNN with the native build and the rest with Python) and on the emulated arm64 phone.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from fakes.adb_fixtures import EmulatedPhone
from fakes.arm_board import phone_without_python_lab
from fakes.native_builds import run_native, run_once
from fakes.paddleocr import CASES, DATA, IDS, MODELS, page
from fakes.records import stored_records
from fakes.tnn_checking.reader import parse_model
from fakes.tnn_checking.reference import HANDLERS, run_model
from fakes.tnn_layers import LAYER_CASES

from edgebench.builds.native_runner import BuiltRunner
from edgebench.converters import ConversionOptions, get_converter
from edgebench.converters.tnn.writer import convert_model
from edgebench.measure.output_check import check_outputs, compare_arrays, tolerance_for
from edgebench.models import BUILTIN_MODELS, build_model
from edgebench.runners import protocol

#: Layer types the executor runs for TNN files other writers make (onnx2tnn's aliases and
#: constants) or that edgebench's writer refuses (ReduceProd: TNN's X86 kernel gives 0).
NOT_WRITTEN = {"BatchNormalization", "Const", "Relu", "Relu6", "Scale", "Softmax", "ReduceProd"}
RUN_TIMEOUT_S = 1200


def run_tnn(
    binary: Path,
    proto: Path,
    feeds: dict[str, np.ndarray],
    work: Path,
    *,
    emulator: str | None = None,
    **spec: object,
) -> tuple[dict, dict[str, np.ndarray]]:
    """One inference of ``proto`` on ``feeds`` in edgebench-native's TNN."""
    return run_once(binary, proto, "tnn", feeds, work, emulator, **spec)


def onnx_outputs(model: onnx.ModelProto | Path, feeds: dict[str, np.ndarray]) -> dict:
    source = str(model) if isinstance(model, Path) else model.SerializeToString()
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds), strict=True))


def judged(outputs: dict[str, np.ndarray], reference: dict[str, np.ndarray], precision: str):
    """The output check of ``outputs`` against ``reference`` at ``precision``'s rule."""
    return check_outputs(
        list(outputs),
        list(outputs.values()),
        list(reference),
        list(reference.values()),
        tolerance_for(precision),
        "reference",
    )


def write_tnn(model: onnx.ModelProto, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    files = convert_model(model)
    (folder / "model.tnnproto").write_text(files.proto)
    (folder / "model.tnnmodel").write_bytes(files.model)
    return folder / "model.tnnproto"


@pytest.fixture(scope="module")
def qemu() -> str:
    found = shutil.which("qemu-aarch64-static")
    if found is None:
        pytest.skip("qemu-aarch64-static is not installed (apt-get install qemu-user-static)")
    return found


# --- whole models on X86 ------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(BUILTIN_MODELS))
def test_builtin_model_matches_onnxruntime(
    native_x86_tnn: BuiltRunner, tmp_path: Path, name: str
) -> None:
    model = build_model(name)
    onnx.save(model, str(tmp_path / "model.onnx"))
    get_converter("tnn").convert(tmp_path / "model.onnx", tmp_path, ConversionOptions())
    (spec,) = model.graph.input
    shape = [d.dim_value for d in spec.type.tensor_type.shape.dim]
    feeds = {spec.name: np.random.default_rng(0).standard_normal(shape, dtype=np.float32)}
    result, outputs = run_tnn(native_x86_tnn.path, tmp_path / "model.tnnproto", feeds, tmp_path)
    assert result["status"] == "ok", result["error"]
    assert result["framework_version"] == native_x86_tnn.frameworks["tnn"]
    check = judged(outputs, onnx_outputs(model, feeds), "fp32")
    figures = f"max abs {check.max_abs_diff:.3g}, rel {check.rel_error:.3g}"
    print(f"\n{name}: TNN X86 vs ONNX Runtime {figures}")
    assert check.passed, (check.problem, check.criterion, check.ratio)


@pytest.mark.parametrize(("model", "shape"), CASES, ids=IDS)
def test_paddleocr_export_matches_onnxruntime(
    native_x86_tnn: BuiltRunner, tmp_path: Path, model: str, shape: list[int]
) -> None:
    options = ConversionOptions(input_shapes={"x": shape})
    files = get_converter("tnn").convert(DATA / MODELS[model], tmp_path, options)
    feeds = {"x": page(shape, model)}
    result, outputs = run_tnn(native_x86_tnn.path, tmp_path / files[0], feeds, tmp_path)
    assert result["status"] == "ok", result["error"]
    (got,) = outputs.values()
    (want,) = onnx_outputs(DATA / MODELS[model], feeds).values()
    check = compare_arrays("y", "y", got, want)
    print(
        f"\n{model} {shape[2]}x{shape[3]}: TNN X86 vs ONNX Runtime max abs "
        f"{check.max_abs_diff:.3g}, rel {check.rel_error:.3g}"
    )
    assert check.degenerate is None and check.passed, (check.criterion, check.ratio)


# --- one graph per layer type -------------------------------------------------------------------


@pytest.fixture(scope="module")
def agreement_table(request: pytest.FixtureRequest) -> Iterator[dict[tuple[str, str], str]]:
    """Rows (case, device) -> figures, printed as one table when the module ends."""
    rows: dict[tuple[str, str], str] = {}
    yield rows
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if rows and reporter is not None:
        reporter.write_line(
            "\nTNN layer types: max |difference| (executor = the writer's NumPy executor)"
        )
        reporter.write_line(f"{'case':38} {'device':10} figures")
        for (case, device), figures in sorted(rows.items()):
            reporter.write_line(f"{case:38} {device:10} {figures}")


def test_the_cases_cover_every_layer_type_the_writer_emits() -> None:
    """Every layer type the NumPy executor runs, less those only other writers emit, has a
    case; a type added to the writer (and so to the executor) fails here until it has one."""
    assert {case.layer for case in LAYER_CASES.values()} == set(HANDLERS) - NOT_WRITTEN


def agree_case(
    binary: Path, case_id: str, work: Path, precision: str, emulator: str | None = None
) -> tuple[str, bool, str]:
    """Run one case in TNN: on its ARM device when ``emulator`` (qemu) runs the aarch64 build,
    else on X86. Returns (table figures, passed, why not)."""
    on_arm = emulator is not None
    case = LAYER_CASES[case_id]
    model = case.build()
    feeds = case.inputs(model)
    proto = write_tnn(model, work)
    tnn = parse_model(proto.read_text(), proto.with_suffix(".tnnmodel").read_bytes())
    assert case.layer in {layer.type for layer in tnn.layers}, case_id
    executor = run_model(tnn, feeds)
    reference = onnx_outputs(model, feeds)
    result, outputs = run_tnn(
        binary, proto, feeds, work, emulator=emulator, precision=precision, threads=1
    )
    if on_arm and not case.on_arm:
        refused = result["status"] == "unsupported" and "no kernel" in result["error"]["message"]
        return "no ARM kernel: refused at load", refused, str(result.get("error"))
    if result["status"] != "ok":
        return f"TNN failed: {result['error']['message']}", False, result["error"]["message"]
    against_executor = judged(outputs, executor, precision)
    against_onnx = judged(outputs, reference, precision)
    figures = (
        f"vs executor {against_executor.max_abs_diff:.2e}   "
        f"vs ONNX Runtime {against_onnx.max_abs_diff:.2e}"
    )
    passed = against_executor.passed and against_onnx.passed
    why = "; ".join(
        f"{label}: {check.problem or check.criterion} {check.ratio}"
        for label, check in (("executor", against_executor), ("ONNX Runtime", against_onnx))
    )
    return figures, passed, why


@pytest.mark.parametrize("case_id", list(LAYER_CASES))
def test_layer_type_agrees_on_x86(
    native_x86_tnn: BuiltRunner, agreement_table: dict, tmp_path: Path, case_id: str
) -> None:
    figures, passed, why = agree_case(native_x86_tnn.path, case_id, tmp_path, "fp32")
    agreement_table[case_id, "X86 fp32"] = figures
    assert passed, why


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("case_id", list(LAYER_CASES))
def test_layer_type_agrees_on_arm(
    native_arm_tnn: BuiltRunner,
    qemu: str,
    agreement_table: dict,
    tmp_path: Path,
    case_id: str,
    precision: str,
) -> None:
    """TNN's ARM device through the aarch64 build under qemu-user (which has ARMv8.2 fp16, so
    fp16 runs TNN's ARM82 half-precision kernels), at that precision's rule."""
    figures, passed, why = agree_case(native_arm_tnn.path, case_id, tmp_path, precision, qemu)
    agreement_table[case_id, f"ARM {precision}"] = figures
    assert passed, why


# --- the runner's own behaviour -------------------------------------------------------------------


def test_bad_tnn_files_get_one_line_naming_the_fix(
    native_x86_tnn: BuiltRunner, tmp_path: Path
) -> None:
    proto = write_tnn(LAYER_CASES["ReLU"].build(), tmp_path)
    base = {"schema": protocol.SPEC_SCHEMA, "framework": "tnn", "iterations": 1, "min_time_s": 0}
    weights = tmp_path / "model.tnnmodel"
    weights.rename(tmp_path / "elsewhere.tnnmodel")
    missing = run_native(native_x86_tnn.path, {**base, "model": str(proto)})
    assert missing["error"]["kind"] == "model_load"
    assert str(weights) in missing["error"]["message"]
    wrong = run_native(native_x86_tnn.path, {**base, "model": str(tmp_path / "elsewhere.tnnmodel")})
    assert wrong["error"]["kind"] == "model_load" and ".tnnproto" in wrong["error"]["message"]
    half = run_native(native_x86_tnn.path, {**base, "model": str(proto), "precision": "fp16"})
    assert half["status"] == "unsupported" and "fp32" in half["error"]["message"]
    garbage = tmp_path / "garbage.tnnproto"
    garbage.write_text('"1 2 x ,"\n"a" ,\n"b" ,\n"c" ,\n"d" ,\n')
    weights.with_name("garbage.tnnmodel").write_bytes(b"")
    unreadable = run_native(native_x86_tnn.path, {**base, "model": str(garbage)})
    assert unreadable["error"]["kind"] == "model_load"
    assert "convert the model again" in unreadable["error"]["message"]


@pytest.fixture(scope="module")
def tnn_mobilenet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tnn-mobilenet")
    onnx.save(build_model("mobilenetv2"), str(folder / "model.onnx"))
    files = get_converter("tnn").convert(folder / "model.onnx", folder, ConversionOptions())
    return folder / files[0]


@pytest.mark.alone
def test_stages_shared_instances_and_layer_profile(
    native_x86_tnn: BuiltRunner, tnn_mobilenet: Path
) -> None:
    """What the other backends give, from TNN's API: SetInputMat / Forward / GetOutputMat as
    the stages, Instances of one TNN object as shared instances (they share the interpreted
    weights; each packs its own), and ForwardWithCallback's layer times as the profile."""
    base = {
        "schema": protocol.SPEC_SCHEMA,
        "model": str(tnn_mobilenet),
        "framework": "tnn",
        "warmup": 1,
        "iterations": 4,
        "min_time_s": 0,
    }
    staged = run_native(native_x86_tnn.path, base)
    assert staged["status"] == "ok", staged["error"]
    per_stage = staged["stages"]["samples_ns"]
    for i, whole in enumerate(staged["samples_ns"]):
        assert sum(per_stage[s][i] for s in ("copy_in", "compute", "copy_out")) == whole
    assert staged["stages"]["boundaries"]["compute"] == "Instance::Forward"

    growth = {}
    for mode in ("separate", "shared"):
        spec = {**base, "instances": 2, "concurrency": 2, "instance_mode": mode}
        result = run_native(native_x86_tnn.path, spec)
        assert result["status"] == "ok", result["error"]
        first, second = result["instances"]["rss_after_load_kb"]
        growth[mode] = second - first
    assert growth["shared"] < 0.5 * growth["separate"], growth

    profiled = run_native(native_x86_tnn.path, {**base, "profile_ops": 2})
    profile = profiled["op_profile"]
    assert profile["source"].startswith("TNN Instance::ForwardWithCallback"), profile
    layers = {
        line.split()[1]: line.split()[0].lstrip('"')
        for line in tnn_mobilenet.read_text().splitlines()[5:]
    }
    ops = profile["ops"]
    assert all(op["impl"] == "X86 fp32" and op["count"] == 1 for op in ops)
    # TNN fuses some layers into others (a ReLU6 into its Convolution): every op it ran is a
    # layer of the file, with the file's type.
    assert all(layers.get(op["name"]) == op["type"] for op in ops), ops
    assert "Convolution" in {op["type"] for op in ops}
    assert 0.5 * profile["inference_ms"] <= profile["total_ms"] <= profile["inference_ms"]


# --- through edgebench run ----------------------------------------------------------------------


@pytest.mark.parametrize("runner", ["auto", "edgebench-native"])
def test_tnn_cells_on_this_host(
    run_cli, eb_env, tmp_path: Path, native_x86_tnn: BuiltRunner, runner: str
) -> None:
    """runner "edgebench-native" measures TNN with the build; "auto" on a host that runs
    Python measures TNN with the build too (Python cannot run it) and the rest with Python."""
    lab = tmp_path / "lab.toml"
    lab.write_text(f'[devices.host]\ntransport = "local"\nrunner = "{runner}"\n')
    args = ["--models", "mobilenetv2", "--frameworks", "tnn,onnxruntime"]
    args += ["--warmup", "1", "--iterations", "4", "--min-time", "0", "--rounds", "1"]
    result = run_cli(["run", "--lab", str(lab), "--devices", "host", *args], timeout=RUN_TIMEOUT_S)
    assert result.returncode == 0, result.stderr[-3000:]
    records = {r["framework"]: r for r in stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))}
    tnn = records["tnn"]
    assert tnn["status"] == "ok", tnn.get("error")
    assert tnn["output_check"]["passed"], tnn["output_check"]
    assert tnn["framework_version"] == native_x86_tnn.frameworks["tnn"]
    assert tnn["device_info"]["runner"] == "edgebench-native (x86_64-linux)"
    assert tnn["n_samples"] == 4
    onnxruntime = records["onnxruntime"]
    if runner == "auto":
        assert onnxruntime["status"] == "ok" and onnxruntime["device_info"]["runner"] == "python"
        shown = run_cli(["devices", "--lab", str(lab), "--devices", "host"], timeout=120)
        assert shown.returncode == 0, shown.stderr[-2000:]
        routed = [ln.strip() for ln in shown.stdout.splitlines() if ln.strip().startswith("tnn:")]
        assert routed == [
            "tnn: measured by edgebench-native (x86_64-linux) (tnn has no Python runtime; "
            "the edgebench-native build links it)"
        ], shown.stdout
    else:
        assert onnxruntime["status"] == "unsupported"


def test_tnn_arm_kernels_on_the_phone_without_python(
    run_cli,
    eb_env,
    tmp_path: Path,
    native_arm_tnn: BuiltRunner,
    board_phone: EmulatedPhone,
    board_work_dir: str,
) -> None:
    """The emulated arm64 phone with no usable Python: runner "auto" picks the aarch64 build,
    and TNN's ARM device runs the built-in mobilenetv2 at fp32 and with its fp16 kernels."""
    lab = phone_without_python_lab(tmp_path / "lab.toml", board_phone, board_work_dir)
    args = ["--models", "mobilenetv2", "--frameworks", "tnn", "--precision", "fp32,fp16"]
    args += ["--warmup", "0", "--iterations", "2", "--min-time", "0", "--rounds", "1"]
    result = run_cli(["run", "--lab", str(lab), "--devices", "phone", *args], timeout=RUN_TIMEOUT_S)
    assert result.returncode == 0, result.stderr[-3000:]
    stored = stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))
    assert sorted(r["precision"] for r in stored) == ["fp16", "fp32"]
    for record in stored:
        label = f"mobilenetv2 TNN ARM {record['precision']}"
        assert record["status"] == "ok", (label, record.get("error"))
        assert record["device_info"]["runner"] == "edgebench-native (aarch64-linux)"
        assert record["framework_version"] == native_arm_tnn.frameworks["tnn"]
        check = record["output_check"]
        print(f"\n{label}: max abs {check['max_abs_diff']:.3g}, rel {check['rel_error']:.3g}")
        assert check["passed"], (label, check)
