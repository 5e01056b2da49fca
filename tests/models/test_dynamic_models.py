"""Built-in models relaxed to symbolic input axes (``edgebench.models.dynamic``), checked in
ONNX Runtime: they run at other sizes, and at their own size they compute what the static
original computes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from edgebench.models import BUILTIN_MODELS, build_model
from edgebench.models.detector import ANCHORS, OUTPUTS_PER_ANCHOR, STRIDES
from edgebench.models.dynamic import RelaxError, build_relaxed, relax_inputs
from edgebench.runners.protocol.input_spec import InputSpec
from edgebench.runners.protocol.tensors import make_inputs

ort = pytest.importorskip("onnxruntime")

RESIZABLE = ("mobilenetv2", "resnet50", "detector")
SIZES = (160, 224, 320)


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options)


def _run(session: ort.InferenceSession, shape: list[int], seed: int = 0) -> np.ndarray:
    feeds = make_inputs([InputSpec("input", shape, "float32")], seed)
    return session.run(None, feeds)[0]


def _expected_output(name: str, batch: int, size: int) -> tuple[int, ...]:
    if name == "detector":
        cells = sum((size // s) ** 2 for s in STRIDES)
        return (batch, ANCHORS * cells, OUTPUTS_PER_ANCHOR)
    return (batch, 1000)


def _dims(value: onnx.ValueInfoProto) -> list[int | str]:
    return [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]


def test_the_registry_names_the_free_axes() -> None:
    free = {name: model.free_axes for name, model in BUILTIN_MODELS.items()}
    assert free == {
        "mobilenetv2": (0, 2, 3),
        "resnet50": (0, 2, 3),
        "vit-tiny": (),
        "detector": (0, 2, 3),
    }


@pytest.mark.parametrize("name", RESIZABLE)
def test_a_relaxed_model_runs_at_other_sizes_and_matches_the_original_at_its_own(
    name: str,
) -> None:
    original = build_model(name)
    relaxed = relax_inputs(original, {"input": list(BUILTIN_MODELS[name].free_axes)})
    assert _dims(relaxed.graph.input[0]) == ["batch", 3, "height", "width"]
    assert _dims(relaxed.graph.output[0])[0] == "batch"
    assert not relaxed.graph.value_info
    own = list(BUILTIN_MODELS[name].input_shape)
    assert _dims(original.graph.input[0]) == own  # relaxing works on a copy
    fixed, dynamic = _session(original), _session(relaxed)
    np.testing.assert_array_equal(_run(dynamic, own), _run(fixed, own))

    for size in SIZES:
        output = _run(dynamic, [1, 3, size, size])
        assert output.shape == _expected_output(name, 1, size)
        assert np.isfinite(output).all()

    # A batch of two: each row is what the model gives that sample alone.
    pair = make_inputs([InputSpec("input", [2, 3, 160, 160], "float32")], 5)["input"]
    both = dynamic.run(None, {"input": pair})[0]
    assert both.shape == _expected_output(name, 2, 160)
    for row in range(2):
        alone = dynamic.run(None, {"input": pair[row : row + 1]})[0]
        np.testing.assert_allclose(both[row : row + 1], alone, rtol=1e-5, atol=1e-5)


def test_the_detector_reshapes_copy_the_batch_and_infer_the_cells() -> None:
    relaxed = build_relaxed("detector")
    targets = {init.name: onnx.numpy_helper.to_array(init) for init in relaxed.graph.initializer}
    reshapes = [n for n in relaxed.graph.node if n.op_type == "Reshape"]
    assert len(reshapes) == 6
    for node in reshapes:
        target = targets[node.input[1]].tolist()
        if node.name.endswith("split_anchors"):
            assert target == [0, ANCHORS, OUTPUTS_PER_ANCHOR, -1]
        else:
            assert target == [0, -1, OUTPUTS_PER_ANCHOR]
    assert _dims(relaxed.graph.output[0]) == ["batch", "output_dim1", OUTPUTS_PER_ANCHOR]


def test_spatial_axes_alone_keep_the_batch_fixed() -> None:
    relaxed = relax_inputs(build_model("detector"), {"input": [2, 3]})
    assert _dims(relaxed.graph.input[0]) == [1, 3, "height", "width"]
    assert _dims(relaxed.graph.output[0]) == [1, "output_dim1", OUTPUTS_PER_ANCHOR]
    output = _run(_session(relaxed), [1, 3, 224, 224])
    assert output.shape == _expected_output("detector", 1, 224)


def test_the_vit_has_no_free_axis() -> None:
    with pytest.raises(RelaxError, match="no input axis"):
        build_relaxed("vit-tiny")
    vit = build_model("vit-tiny")
    with pytest.raises(RelaxError, match="add_pos"):  # the position embedding fixes 224
        relax_inputs(vit, {"input": [2, 3]})
    with pytest.raises(RelaxError, match="cat_cls"):  # the class token fixes the batch
        relax_inputs(vit, {"input": [0]})


def test_bad_requests_are_refused() -> None:
    model = build_model("mobilenetv2")
    with pytest.raises(RelaxError, match="no graph inputs"):
        relax_inputs(model, {"image": [2]})
    with pytest.raises(RelaxError, match="no axes"):
        relax_inputs(model, {"input": [4]})
    relaxed = relax_inputs(model, {"input": [2, 3]})
    with pytest.raises(RelaxError, match="static model"):
        relax_inputs(relaxed, {"input": [0]})
