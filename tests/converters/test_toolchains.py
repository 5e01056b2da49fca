"""Converters that run in their own venvs: real pnnx and onnx2tf toolchains, real runtimes.

pnnx (110 MB) is installed here on first use; onnx2tf (TensorFlow, 2.6 GB) is not: its tests
skip without it, naming `edgebench toolchains install tflite` (.ci/run runs it first). Both live
in EDGEBENCH_TOOLCHAINS_DIR, which tests/fakes/environment.py defaults to the user's cache, so
an install is reused across runs. Skip all of them with ``-m "not toolchains"``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from fakes.toolchains import onnx2tf_or_skip
from onnx import TensorProto, helper, numpy_helper

from edgebench.converters.base import ConversionError, ConversionOptions
from edgebench.converters.ncnn_converter import NcnnConverter
from edgebench.converters.onnx2tf_converter import Onnx2tfConverter
from edgebench.converters.subprocess_tools import run_in_toolchain, scratch_dir
from edgebench.converters.toolchains import (
    ROOT_ENV,
    TOOLCHAINS,
    install_toolchain,
    toolchain_bin,
    toolchain_home,
    toolchain_python,
    toolchain_status,
)
from edgebench.models import build_model
from edgebench.runners.protocol.io_map import IoMap

pytestmark = pytest.mark.toolchains

NO_NETWORK = {
    k: "http://127.0.0.1:9" for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
}


# ---------------------------------------------------------------- toolchains and models


@pytest.fixture(scope="module")
def toolchains_root(tmp_path_factory: pytest.TempPathFactory):
    """The shared toolchains folder (EDGEBENCH_TOOLCHAINS_DIR) or a temporary one."""
    shared = os.environ.get(ROOT_ENV)
    root = Path(shared or tmp_path_factory.mktemp("toolchains"))
    patch = pytest.MonkeyPatch()
    patch.setenv(ROOT_ENV, str(root))
    yield root
    patch.undo()
    if not shared:  # pytest keeps recent temp folders; do not keep 2.7 GB in each
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def private_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A toolchains folder of this test's own, removed afterwards."""
    root = tmp_path / "toolchains"
    monkeypatch.setenv(ROOT_ENV, str(root))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def ncnn_toolchain(toolchains_root: Path):
    status = install_toolchain("ncnn")
    assert status.state == "installed", status.detail
    return status


@pytest.fixture(scope="module")
def tflite_toolchain(toolchains_root: Path):
    return onnx2tf_or_skip()


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("toolchain-models")
    paths = {"small": _save(_small_model(), folder / "small.onnx")}
    paths["two_io"] = _save(_two_io_model(), folder / "two_io.onnx")
    paths["gelu"] = _save(_gelu_model(), folder / "gelu.onnx")
    paths["mobilenetv2"] = _save(build_model("mobilenetv2"), folder / "mobilenetv2.onnx")
    return paths


def _save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _make(nodes, inputs, outputs, initializers=(), extra_opsets=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid("", 17), *extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model


def _const(rng: np.random.Generator, name: str, shape: tuple[int, ...], scale: float):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _gelu_model() -> onnx.ModelProto:
    """Tokens through MatMul and an erf-GELU, as a ViT's MLP exports it (the Erf trap)."""
    rng = np.random.default_rng(2)
    inits = [
        _const(rng, "w", (32, 32), 0.2),
        numpy_helper.from_array(np.asarray(np.sqrt(2.0), np.float32), "sqrt2"),
        numpy_helper.from_array(np.asarray(1.0, np.float32), "one"),
        numpy_helper.from_array(np.asarray(0.5, np.float32), "half"),
    ]
    nodes = [
        helper.make_node("MatMul", ["tokens", "w"], ["m"], name="fc1"),
        helper.make_node("Div", ["m", "sqrt2"], ["d"], name="gelu_div"),
        helper.make_node("Erf", ["d"], ["e"], name="gelu_erf"),
        helper.make_node("Add", ["e", "one"], ["a"], name="gelu_add"),
        helper.make_node("Mul", ["m", "a"], ["p"], name="gelu_mul"),
        helper.make_node("Mul", ["p", "half"], ["y"], name="gelu_half"),
    ]
    return _make(
        nodes,
        [helper.make_tensor_value_info("tokens", TensorProto.FLOAT, [1, 16, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 32])],
        inits,
    )


def _small_model() -> onnx.ModelProto:
    """Conv + ReLU + Gemm on a 3x16x16 image."""
    rng = np.random.default_rng(1)
    inits = [
        _const(rng, "w", (8, 3, 3, 3), 0.2),
        _const(rng, "b", (8,), 0.1),
        _const(rng, "gw", (10, 8 * 16 * 16), 0.05),
        _const(rng, "gb", (10,), 0.1),
    ]
    nodes = [
        helper.make_node("Conv", ["input", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Flatten", ["r"], ["f"], axis=1, name="flatten"),
        helper.make_node("Gemm", ["f", "gw", "gb"], ["logits"], transB=1, name="fc"),
    ]
    return _make(
        nodes,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
        inits,
    )


def _two_io_model() -> onnx.ModelProto:
    """Two inputs and two outputs whose names sort differently and need sanitising."""
    rng = np.random.default_rng(2)
    nodes = [
        helper.make_node("Conv", ["img.in:0", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Add", ["c", "bias/x"], ["feat_map"], name="add"),
        helper.make_node("ReduceMean", ["feat_map"], ["pooled.out"], axes=[2, 3], keepdims=0),
    ]
    return _make(
        nodes,
        [
            helper.make_tensor_value_info("img.in:0", TensorProto.FLOAT, [1, 3, 8, 8]),
            helper.make_tensor_value_info("bias/x", TensorProto.FLOAT, [1, 4, 8, 8]),
        ],
        [
            helper.make_tensor_value_info("pooled.out", TensorProto.FLOAT, [1, 4]),
            helper.make_tensor_value_info("feat_map", TensorProto.FLOAT, [1, 4, 8, 8]),
        ],
        [_const(rng, "w", (4, 3, 3, 3), 0.2)],
    )


def _custom_op_model() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("FancyOp", ["r"], ["y"], domain="com.example", name="fancy_1"),
    ]
    return _make(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])],
        extra_opsets=[helper.make_opsetid("com.example", 1)],
    )


# ---------------------------------------------------------------- running the results


def _feeds(model_path: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    model = onnx.load(str(model_path))
    initializers = {i.name for i in model.graph.initializer}
    return {
        v.name: rng.random([d.dim_value for d in v.type.tensor_type.shape.dim], dtype=np.float32)
        for v in model.graph.input
        if v.name not in initializers
    }


def _onnxruntime(model_path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds), strict=True))


def _run_ncnn(folder: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """ncnn in fp32 throughout, fed through io.json as the runner reads it."""
    ncnn = pytest.importorskip("ncnn")
    io = IoMap.beside(str(folder / "model.param"))
    net = ncnn.Net()
    net.opt.use_fp16_storage = False
    net.opt.use_fp16_arithmetic = False
    net.opt.use_fp16_packed = False
    net.opt.num_threads = 1
    assert net.load_param(str(folder / "model.param")) == 0
    assert net.load_model(str(folder / "model.bin")) == 0
    extractor = net.create_extractor()
    for tensor in io.inputs:
        array = tensor.to_artifact(feeds[tensor.onnx_name])
        assert list(array.shape) == tensor.shape
        assert extractor.input(tensor.name, ncnn.Mat(array).clone()) == 0
    results = {}
    for tensor in io.outputs:
        code, mat = extractor.extract(tensor.name)
        assert code == 0, tensor.name
        results[tensor.onnx_name] = tensor.to_onnx(np.array(mat))  # np.array copies
        del mat
    del extractor  # before the net, which owns the allocator its blobs live in
    return results


def _run_tflite(folder: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """LiteRT, tensors found by the names in io.json and transposed as it says."""
    interpreter_module = pytest.importorskip("ai_edge_litert.interpreter")
    io = IoMap.beside(str(folder / "model.tflite"))
    interpreter = interpreter_module.Interpreter(
        model_path=str(folder / "model.tflite"), num_threads=1
    )
    interpreter.allocate_tensors()  # raises for a Flex op
    index = {d["name"]: d["index"] for d in interpreter.get_input_details()}
    index.update({d["name"]: d["index"] for d in interpreter.get_output_details()})
    for tensor in io.inputs:
        array = tensor.to_artifact(feeds[tensor.onnx_name])
        assert list(array.shape) == tensor.shape
        interpreter.set_tensor(index[tensor.name], array)
    interpreter.invoke()
    return {t.onnx_name: t.to_onnx(interpreter.get_tensor(index[t.name])) for t in io.outputs}


def _max_diff(got: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> float:
    assert set(got) == set(expected)
    worst = 0.0
    for name, reference in expected.items():
        assert got[name].shape == reference.shape, name
        scale = max(1.0, float(np.abs(reference).max()))
        worst = max(worst, float(np.abs(got[name] - reference).max()) / scale)
    return worst


def _convert(converter, model_path: Path, out: Path, precision: str = "fp32") -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    files = converter.convert(model_path, out, ConversionOptions(precision=precision))
    seconds = time.monotonic() - started
    print(f"{converter.format} {model_path.stem} {precision}: {seconds:.2f} s")
    assert sorted(p.name for p in out.iterdir()) == sorted(files)  # no leftovers from the tool
    return files


# ---------------------------------------------------------------- ncnn


@pytest.mark.parametrize("model", ["small", "two_io", "mobilenetv2"])
def test_ncnn_output_matches_onnxruntime(ncnn_toolchain, models, tmp_path, model):
    out = tmp_path / "out"
    files = _convert(NcnnConverter(), models[model], out)
    assert files == ["model.param", "model.bin", "io.json"]
    io = json.loads((out / "io.json").read_text())
    assert [e["name"] for e in io["inputs"]] == [f"in{i}" for i in range(len(io["inputs"]))]
    assert [e["name"] for e in io["outputs"]] == [f"out{i}" for i in range(len(io["outputs"]))]
    feeds = _feeds(models[model])
    diff = _max_diff(_run_ncnn(out, feeds), _onnxruntime(models[model], feeds))
    print(f"ncnn {model}: max abs diff {diff:.2e}")
    assert diff < 1e-4


def test_ncnn_fp16_writes_half_weights(ncnn_toolchain, models, tmp_path):
    _convert(NcnnConverter(), models["small"], tmp_path / "fp32")
    _convert(NcnnConverter(), models["small"], tmp_path / "fp16", precision="fp16")
    size32 = (tmp_path / "fp32" / "model.bin").stat().st_size
    size16 = (tmp_path / "fp16" / "model.bin").stat().st_size
    assert size16 < 0.6 * size32
    feeds = _feeds(models["small"])
    diff = _max_diff(_run_ncnn(tmp_path / "fp16", feeds), _onnxruntime(models["small"], feeds))
    assert 0 < diff < 1e-2


def test_ncnn_version_comes_from_the_toolchain(ncnn_toolchain):
    converter = NcnnConverter()
    assert converter.version() == f"pnnx-{ncnn_toolchain.version}"
    assert ncnn_toolchain.version == "20261020"
    assert converter.unavailable_reason() is None


def test_ncnn_unsupported_op_names_the_op(ncnn_toolchain, tmp_path):
    det = _make(
        [helper.make_node("Det", ["x"], ["y"], name="det_1")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    for model, op, node in ((det, "Det", "det_1"), (_custom_op_model(), "FancyOp", "fancy_1")):
        path = _save_unchecked(model, tmp_path / f"{op}.onnx")
        out = tmp_path / op
        out.mkdir()
        with pytest.raises(ConversionError) as info:
            NcnnConverter().convert(path, out, ConversionOptions())
        assert info.value.kind == "unsupported_op"
        assert op in info.value.message and node in info.value.message
        assert info.value.log
        assert list(out.iterdir()) == []


def _save_unchecked(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


# ---------------------------------------------------------------- tflite


@pytest.mark.parametrize("model", ["small", "two_io", "gelu"])
def test_tflite_output_matches_onnxruntime(tflite_toolchain, models, tmp_path, model):
    """gelu checks the Erf trap too: LiteRT refuses to run a model with a Flex op. (onnx2tf is
    the comparison route now; the built-in ViT through it took 170 s of the suite.)"""
    out = tmp_path / "out"
    files = _convert(Onnx2tfConverter(), models[model], out)
    assert files == ["model.tflite", "io.json"]
    feeds = _feeds(models[model])
    diff = _max_diff(_run_tflite(out, feeds), _onnxruntime(models[model], feeds))
    print(f"tflite {model}: max abs diff {diff:.2e}")
    assert diff < 1e-4
    io = json.loads((out / "io.json").read_text())
    image_inputs = [e for e in io["inputs"] if len(e["onnx_shape"]) == 4]
    assert all(e["perm"] == [0, 2, 3, 1] for e in image_inputs)
    assert image_inputs or model == "gelu"


def test_tflite_flex_op_is_reported_as_unsupported(tflite_toolchain, tmp_path):
    """A Flex model (onnx2tf run without -rtpo Erf) fails the converter's LiteRT check."""
    erf = _make(
        [helper.make_node("Erf", ["x"], ["y"], name="erf_1")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
    )
    _save(erf, tmp_path / "erf.onnx")
    converter = Onnx2tfConverter()
    with scratch_dir(tmp_path, "flex") as work:
        argv = [str(toolchain_bin("tflite", "onnx2tf")), "-i", str(tmp_path / "erf.onnx")]
        run = run_in_toolchain("tflite", [*argv, "-o", "out"], cwd=work, timeout=600)
        assert run.returncode == 0, run.log
        with pytest.raises(ConversionError) as info:
            converter._inspect(work / "out" / "erf_float32.tflite", work)
    assert info.value.kind == "unsupported_op"
    assert "Erf" in info.value.message and "Flex" in info.value.message


def test_tflite_fp16_uses_the_float16_model(tflite_toolchain, models, tmp_path):
    _convert(Onnx2tfConverter(), models["small"], tmp_path / "fp32")
    _convert(Onnx2tfConverter(), models["small"], tmp_path / "fp16", precision="fp16")
    size32 = (tmp_path / "fp32" / "model.tflite").stat().st_size
    size16 = (tmp_path / "fp16" / "model.tflite").stat().st_size
    assert size16 < 0.6 * size32
    feeds = _feeds(models["small"])
    diff = _max_diff(_run_tflite(tmp_path / "fp16", feeds), _onnxruntime(models["small"], feeds))
    assert diff < 1e-2


def test_tflite_int8_through_onnx2tf_is_calibrated_on_edgebench_s_set(
    tflite_toolchain, models, tmp_path
):
    """onnx2tf's full-integer route (-oiqt) stays available for comparison: it calibrates on
    the same set as every other framework (-cind), not on its own download."""
    from edgebench.converters.tflite.float_ops import float_op_types

    feeds = _feeds(models["small"])
    name, sample = next(iter(feeds.items()))
    rng = np.random.default_rng(3)
    calibration = tmp_path / "calibration.npz"
    np.savez(calibration, **{name: rng.random((8, *sample.shape), dtype=np.float32)})
    out = tmp_path / "int8"
    out.mkdir()
    converter = Onnx2tfConverter()
    options = ConversionOptions("int8", {name: list(sample.shape)}, calibration, "set")
    files = converter.convert(models["small"], out, options)
    assert sorted(p.name for p in out.iterdir()) == sorted(files)
    interpreter_module = pytest.importorskip("ai_edge_litert.interpreter")
    interpreter = interpreter_module.Interpreter(model_path=str(out / "model.tflite"))
    types = {d["dtype"] for d in interpreter.get_tensor_details()}
    assert np.int8 in types  # int8 weights and activations inside ...
    assert interpreter.get_input_details()[0]["dtype"] == np.float32  # ... float at the edges
    assert converter.last_quant["fp32_fallback_ops"] == float_op_types(
        (out / "model.tflite").read_bytes()
    )
    assert converter.last_quant["method"].startswith("onnx2tf -oiqt")
    diff = _max_diff(_run_tflite(out, feeds), _onnxruntime(models["small"], feeds))
    assert diff < 0.1


def test_tflite_version_and_input_shapes_option(tflite_toolchain, tmp_path):
    assert Onnx2tfConverter().version() == "onnx2tf-1.29.24"
    dynamic = _small_model()
    dynamic.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    path = _save(dynamic, tmp_path / "dynamic.onnx")
    (tmp_path / "a").mkdir()
    with pytest.raises(ConversionError, match="no fixed shape"):
        Onnx2tfConverter().convert(path, tmp_path / "a", ConversionOptions())
    options = ConversionOptions(input_shapes={"input": [1, 3, 16, 16]})
    (tmp_path / "b").mkdir()
    Onnx2tfConverter().convert(path, tmp_path / "b", options)
    io = json.loads((tmp_path / "b" / "io.json").read_text())
    assert io["inputs"][0]["shape"] == [1, 16, 16, 3]


def test_tflite_unsupported_op_names_the_op(tflite_toolchain, tmp_path):
    path = _save_unchecked(_custom_op_model(), tmp_path / "custom.onnx")
    (tmp_path / "out").mkdir()
    with pytest.raises(ConversionError) as info:
        Onnx2tfConverter().convert(path, tmp_path / "out", ConversionOptions())
    assert info.value.kind == "unsupported_op"
    assert "FancyOp" in info.value.message and "fancy_1" in info.value.message
    assert "not yet implemented" in info.value.log


# ---------------------------------------------------------------- both


@pytest.mark.parametrize("converter_class", [NcnnConverter, Onnx2tfConverter])
def test_garbage_model_fails_with_the_converter_log(
    ncnn_toolchain, tflite_toolchain, converter_class, corrupt_model, tmp_path
):
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ConversionError) as info:
        converter_class().convert(corrupt_model, out, ConversionOptions())
    assert info.value.kind == "failed"
    tool = "pnnx" if converter_class is NcnnConverter else "onnx2tf"
    assert tool in info.value.message
    assert info.value.log.strip()
    assert info.value.log.strip().splitlines()[-1].strip()[:300] in info.value.message
    assert list(out.iterdir()) == []


_OFFLINE_SCRIPT = """
import sys
from pathlib import Path
from edgebench.converters.base import ConversionOptions
from edgebench.converters.ncnn_converter import NcnnConverter
from edgebench.converters.onnx2tf_converter import Onnx2tfConverter
for converter in (NcnnConverter(), Onnx2tfConverter()):
    out = Path(sys.argv[2]) / converter.format
    out.mkdir()
    converter.convert(Path(sys.argv[1]), out, ConversionOptions())
"""


def test_conversion_works_offline_and_leaves_home_alone(
    ncnn_toolchain, tflite_toolchain, toolchains_root, models, tmp_path
):
    """Proxies pointed at a closed port (and no network namespace at all where unshare works);
    the 3-channel image input would make onnx2tf download its calibration file."""
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, **NO_NETWORK, "HOME": str(home), ROOT_ENV: str(toolchains_root)}
    out = tmp_path / "out"
    out.mkdir()
    argv = [sys.executable, "-c", _OFFLINE_SCRIPT, str(models["small"]), str(out)]
    if shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"]).returncode == 0:
        argv = ["unshare", "-n", *argv]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout == ""  # converters print nothing
    assert list(home.iterdir()) == []
    assert (out / "ncnn" / "model.param").is_file()
    assert (out / "tflite" / "model.tflite").is_file()
    assert (toolchain_home("tflite") / ".keras").is_dir()  # onnx2tf's writes land here


# ---------------------------------------------------------------- install states


def test_missing_toolchain_gives_the_install_command(private_root, tmp_path, models):
    for converter in (NcnnConverter(), Onnx2tfConverter()):
        name = converter.format
        expected = f"the {name} converter needs its toolchain: edgebench toolchains install {name}"
        assert toolchain_status(name).state == "missing"
        assert converter.unavailable_reason() == expected
        assert converter.version() in ("pnnx-missing", "onnx2tf-missing")
        with pytest.raises(ConversionError) as info:
            converter.convert(models["small"], tmp_path, ConversionOptions())
        assert info.value.kind == "toolchain_missing"
        assert info.value.message == expected


def test_install_is_idempotent(ncnn_toolchain, toolchains_root):
    state = json.loads((toolchains_root / "ncnn" / "toolchain.json").read_text())
    messages: list[str] = []
    again = install_toolchain("ncnn", progress=messages.append)
    assert again.state == "installed"
    assert json.loads((toolchains_root / "ncnn" / "toolchain.json").read_text()) == state
    assert messages and "already installed" in messages[-1]
    for key in ("version", "installed_at", "size", "packages", "requirements"):
        assert state[key], key
    assert state["size"] == again.size_bytes and again.size_bytes > 50e6


def test_broken_toolchain_is_reported_and_repaired(private_root, tmp_path, models):
    assert install_toolchain("ncnn").state == "installed"
    toolchain_python("ncnn").unlink()
    status = toolchain_status("ncnn")
    assert status.state == "broken"
    assert "Python is missing" in status.detail
    reason = NcnnConverter().unavailable_reason()
    assert "broken" in reason and reason.endswith("edgebench toolchains install ncnn")
    with pytest.raises(ConversionError) as info:
        NcnnConverter().convert(models["small"], tmp_path, ConversionOptions())
    assert info.value.kind == "toolchain_missing"

    assert install_toolchain("ncnn").state == "installed"
    assert len(list((private_root / "ncnn").glob("venv-*"))) == 1
    (tmp_path / "out").mkdir()
    assert NcnnConverter().convert(models["small"], tmp_path / "out", ConversionOptions())


def test_failed_install_is_broken_with_the_pip_error_then_repaired(
    private_root, tmp_path, monkeypatch
):
    good = TOOLCHAINS["ncnn"]
    missing_wheel = tmp_path / "pnnx-0-py3-none-any.whl"  # a local file that is not there
    monkeypatch.setitem(
        TOOLCHAINS, "ncnn", dataclasses.replace(good, requirements=(str(missing_wheel),))
    )
    failed = install_toolchain("ncnn")
    assert failed.state == "broken"
    assert "pip install exited" in failed.detail
    assert "No such file or directory" in failed.detail  # pip's own words
    assert toolchain_status("ncnn").state == "broken"
    assert list((private_root / "ncnn").glob("venv-*")) == []

    monkeypatch.setitem(TOOLCHAINS, "ncnn", good)
    repaired = install_toolchain("ncnn")
    assert repaired.state == "installed" and repaired.detail is None
