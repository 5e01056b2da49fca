"""The QDQ model ONNX Runtime's quantizer writes for ONNX Runtime and OpenVINO: an old opset is
raised first, and a model that ONNX's checker or ONNX Runtime refuses never reaches the cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgebench.converters import ArtifactCache, ConversionError, ConversionOptions
from edgebench.converters.onnx_qdq_converter import MODEL_FILE, OnnxQdqConverter
from edgebench.converters.qdq import quantize_qdq

pytest.importorskip("onnxruntime")

SHAPE = [1, 3, 8, 8]


def _opset9_convnet(path: Path) -> Path:
    """Conv + BatchNorm + Relu at opset 9, as old exporters wrote them."""
    rng = np.random.default_rng(3)

    def tensor(name: str, value: np.ndarray) -> onnx.TensorProto:
        return numpy_helper.from_array(value.astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
        helper.make_node("Relu", ["n"], ["y"]),
    ]
    weights = [
        tensor("w", rng.normal(0, 0.3, (4, 3, 3, 3))),
        tensor("s", rng.uniform(0.5, 1.5, 4)),
        tensor("b", rng.normal(0, 0.1, 4)),
        tensor("m", rng.normal(0, 0.1, 4)),
        tensor("v", rng.uniform(0.5, 1.5, 4)),
    ]
    graph = helper.make_graph(
        nodes,
        "old",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    model.ir_version = 4
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _options(tmp_path: Path) -> ConversionOptions:
    calibration = tmp_path / "calibration.npz"
    samples = np.random.default_rng(4).normal(size=(4, *SHAPE)).astype(np.float32)
    np.savez(calibration, x=samples)
    return ConversionOptions(
        precision="int8",
        input_shapes={"x": SHAPE},
        calibration=calibration,
        calibration_sha256="test-set",
    )


class _StopsAtOpset11(OnnxQdqConverter):
    """The quantizer left at opset 11, where ONNX Runtime's own raise stops: its per-channel
    DequantizeLinear then has an axis that opset does not have (the issue's broken model)."""

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        quantize_qdq(onnx_path, Path(out_dir) / MODEL_FILE, options, self.timeout_s, opset=11)
        return [MODEL_FILE]


def test_an_opset9_model_is_raised_to_13_and_quantized_per_channel(tmp_path: Path) -> None:
    source = _opset9_convnet(tmp_path / "old.onnx")
    target = tmp_path / "old.qdq.onnx"
    run, quant = quantize_qdq(source, target, _options(tmp_path), 300)
    assert "opset 9 raised to 13" in run.log
    assert quant["granularity"].startswith("per-channel")
    model = onnx.load(str(target))
    onnx.checker.check_model(model, full_check=True)
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [13]
    assert any(
        n.op_type == "DequantizeLinear" and any(a.name == "axis" for a in n.attribute)
        for n in model.graph.node
    )
    assert list(tmp_path.glob("old.qdq.onnx*")) == [target]  # the raised copy is gone


def test_an_invalid_qdq_model_is_removed_and_never_cached(tmp_path: Path) -> None:
    source = _opset9_convnet(tmp_path / "old.onnx")
    cache = ArtifactCache(tmp_path / "artifacts")
    with pytest.raises(ConversionError) as failed:
        cache.convert(_StopsAtOpset11(), source, "sha-of-old", _options(tmp_path))
    message = failed.value.message
    assert failed.value.kind == "failed" and "\n" not in message
    assert message.startswith("ONNX Runtime static quantization failed: the quantized model is ")
    assert "axis" in message and "DequantizeLinear" in message
    # Nothing is left: no entry, no scratch folder, no half-written model.
    assert list((tmp_path / "artifacts" / "onnx-qdq").iterdir()) == []
