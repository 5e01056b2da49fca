"""Every real third-party model in tests/data through every framework edgebench-native links
(ncnn, MNN, TNN), each checked against ONNX Runtime by the output check's fp32 rule: PaddleOCR's
two exports and the ONNX twins of MediaPipe's .tflite models (edgebench's reader makes them).
Small shapes, one inference each, so a two-core CI pays seconds per cell.

The ncnn cells are those issue 40 found crashing: pnnx writes ncnn's batch dialect (a Reshape's
batch axes, ``0n`` in its shape expression) that the older ncnn edgebench-native links cannot
read (backends/ncnn_param.h). A layer that this ncnn cannot read is refused in one line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from fakes.native_builds import run_once, with_framework
from fakes.paddleocr import DATA, MODELS, page
from fakes.toolchains import converter_or_skip

from edgebench.builds.native_runner import BuiltRunner
from edgebench.converters import ConversionOptions, get_converter
from edgebench.converters.tflite_import import tflite_to_onnx
from edgebench.measure.output_check import check_outputs, tolerance_for

MEDIAPIPE = Path(__file__).resolve().parents[1] / "data" / "mediapipe"
#: PaddleOCR's exports at a small shape each (the detector takes multiples of 32).
PADDLEOCR_SHAPES = {"det": [1, 3, 96, 128], "cls": [1, 3, 48, 192]}
MODEL_IDS = [f"paddleocr-{m}" for m in PADDLEOCR_SHAPES] + [
    f"mediapipe-{p.stem}" for p in sorted(MEDIAPIPE.glob("*.tflite"))
]
FRAMEWORKS = ("ncnn", "mnn", "tnn")
#: The file of each converter's output that names the model to the runner.
MODEL_FILE = {"ncnn": "model.param", "mnn": "model.mnn", "tnn": "model.tnnproto"}


def onnx_outputs(model: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds), strict=True))


class RealModel:
    """One real model as ONNX, its feeds, and ONNX Runtime's outputs on them."""

    def __init__(self, model_id: str, folder: Path) -> None:
        source, name = model_id.split("-", 1)
        if source == "paddleocr":
            self.onnx = DATA / MODELS[name]
            shape = PADDLEOCR_SHAPES[name]
            self.feeds = {"x": page(shape, name)}
        else:
            self.onnx = folder / f"{name}.onnx"
            report = tflite_to_onnx(MEDIAPIPE / f"{name}.tflite", self.onnx)
            rng = np.random.default_rng(1)  # MediaPipe's images are in [-1, 1]
            self.feeds = {
                t.name: rng.uniform(-1, 1, t.shape).astype(np.float32) for t in report.inputs
            }
        self.shapes = {n: list(v.shape) for n, v in self.feeds.items()}
        self.reference = onnx_outputs(self.onnx, self.feeds)


@pytest.fixture(scope="module")
def real_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RealModel]:
    folder = tmp_path_factory.mktemp("twins")
    return {model_id: RealModel(model_id, folder) for model_id in MODEL_IDS}


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_real_model_matches_onnxruntime(
    native_x86: BuiltRunner,
    real_models: dict[str, RealModel],
    tmp_path: Path,
    model_id: str,
    framework: str,
) -> None:
    runner = with_framework(native_x86, framework)
    model = real_models[model_id]
    converter = converter_or_skip(framework)
    converter.convert(model.onnx, tmp_path, ConversionOptions(input_shapes=model.shapes))
    result, outputs = run_once(
        runner.path, tmp_path / MODEL_FILE[framework], framework, model.feeds, tmp_path / "run"
    )
    assert result["status"] == "ok", result["error"]
    check = check_outputs(
        list(outputs),
        list(outputs.values()),
        list(model.reference),
        list(model.reference.values()),
        tolerance_for("fp32"),
        "ONNX Runtime",
    )
    print(
        f"\n{model_id} on {framework}: max abs {check.max_abs_diff:.3g}, rel {check.rel_error:.3g}"
    )
    assert check.passed, check.summary()
    # at least one output says something (MediaPipe's one-value face flag alone would not)
    assert any(c.degenerate is None for c in check.outputs), [c.degenerate for c in check.outputs]


def test_an_unreadable_ncnn_layer_is_refused_in_one_line(
    native_x86: BuiltRunner, real_models: dict[str, RealModel], tmp_path: Path
) -> None:
    """ncnn's Net::load_param skips a layer whose own load_param fails, then dereferences the
    gap (signal 11); the runner reads each layer first and names the one it cannot read."""
    model = real_models["paddleocr-cls"]
    get_converter("ncnn").convert(
        model.onnx, tmp_path, ConversionOptions(input_shapes=model.shapes)
    )
    param = tmp_path / "model.param"
    lines = param.read_text().splitlines()
    index = next(i for i, ln in enumerate(lines) if ln.startswith("Reshape"))
    head = lines[index].split()[:6]  # Reshape, its name, 1 1, its bottom and top blobs
    name = head[1]
    lines[index] = " ".join(head) + ' 6="1,1,//(8,0)"'  # divides by zero in load_param
    param.write_text("\n".join(lines) + "\n")
    result, _ = run_once(native_x86.path, param, "ncnn", model.feeds, tmp_path / "run")
    assert result["status"] == "failed" and result["error"]["kind"] == "model_load", result
    message = result["error"]["message"]
    assert f"could not read layer Reshape {name} of {param}" in message, message
    assert "\n" not in message
