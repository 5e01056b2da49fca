"""ONNX Runtime's GPU streams, run for real on the CPU device of the onnxruntime installed
here (the same binding calls, with "cpu" for "cuda"): everything bound once to buffers made
for the stream, the inputs refilled in place on each run, the outputs in their pre-allocated
buffers; with CUDA graphs, one session per live stream, a released stream's session and
buffers taken over by the next stream of the same shapes, and an output whose shape only the
run tells refused in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from fakes.models import save_conv_model
from onnx import TensorProto, helper

from edgebench.runners.backends import ort_gpu_streams as streams
from edgebench.runners.protocol.errors import BackendError


def _session(path: Path) -> onnxruntime.InferenceSession:
    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _feeds(seed: int) -> dict[str, np.ndarray]:
    x = np.random.default_rng(seed).standard_normal((1, 3, 8, 8)).astype(np.float32)
    return {"x": x}


class Sessions:
    """Real sessions of one model: the loaded one, and those made for further streams."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.loaded = _session(path)
        self.made: list[onnxruntime.InferenceSession] = []

    def make(self) -> onnxruntime.InferenceSession:
        self.made.append(_session(self.path))
        return self.made[-1]

    def pool(self, cuda_graph: bool) -> streams.StreamSessions:
        return streams.StreamSessions(onnxruntime, self.loaded, self.make, cuda_graph, "cpu")

    def expected(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        return self.loaded.run(None, feeds)[0]


@pytest.fixture()
def conv(tmp_path: Path) -> Sessions:
    return Sessions(save_conv_model(tmp_path / "conv.onnx", ["N", 3, 8, 8]))


@pytest.mark.parametrize("graph", [False, True])
def test_the_plan_binds_every_input_and_output_once(conv: Sessions, graph: bool) -> None:
    plan = streams.binding_plan(conv.loaded, _feeds(0), graph)
    assert plan.bound_once() == ("x", "y")  # each once, nothing bound again per run
    assert plan.refilled_per_run() == ("x",)
    # The output's free batch dimension is the input's, so its buffer is made before the run.
    assert plan.fixed_outputs == (streams.OutputBuffer("y", (1, 8, 8, 8), "float32"),)
    assert plan.sized_by_run == ()
    assert plan.own_session is graph


@pytest.mark.parametrize("graph", [False, True])
def test_each_run_fills_the_outputs_buffer_bound_before_the_first(
    conv: Sessions, graph: bool
) -> None:
    pool = conv.pool(graph)
    feeds = _feeds(1)
    stream = pool.stream(feeds)
    bound = pool.bound[0] if graph else None
    addresses = set()
    for _ in range(3):
        (out,) = stream()
        np.testing.assert_allclose(out, conv.expected(feeds), rtol=1e-6)
        if bound is not None:
            (device_out,) = bound.binding.get_outputs()
            addresses.add(device_out.data_ptr())
    if bound is not None:
        assert addresses == {bound.outputs["y"].data_ptr()}


def test_n_streams_get_n_sessions_with_cuda_graphs(conv: Sessions) -> None:
    pool = conv.pool(cuda_graph=True)
    inputs = [_feeds(seed) for seed in range(3)]
    live = [pool.stream(feeds) for feeds in inputs]
    sessions = pool.sessions()
    assert len(sessions) == 3 and sessions[0] is conv.loaded and len(conv.made) == 2
    for stream, feeds in zip(live, inputs, strict=True):
        np.testing.assert_allclose(stream()[0], conv.expected(feeds), rtol=1e-6)


def test_without_cuda_graphs_every_stream_shares_the_loaded_session(conv: Sessions) -> None:
    pool = conv.pool(cuda_graph=False)
    inputs = [_feeds(seed) for seed in range(3)]
    live = [pool.stream(feeds) for feeds in inputs]
    for stream, feeds in zip(live, inputs, strict=True):
        np.testing.assert_allclose(stream()[0], conv.expected(feeds), rtol=1e-6)
    assert conv.made == [] and pool.bound == []


def test_a_released_streams_session_is_refilled_by_the_next(conv: Sessions) -> None:
    """One sample after another (the evaluation set): one session and one set of buffers,
    each new stream's inputs copied into them in place, not a session per sample."""
    pool = conv.pool(cuda_graph=True)
    for seed in range(3):
        feeds = _feeds(seed)
        np.testing.assert_allclose(pool.stream(feeds)()[0], conv.expected(feeds), rtol=1e-6)
    assert len(pool.bound) == 1 and conv.made == []
    other = {"x": np.ones((2, 3, 8, 8), np.float32)}  # another shape: another session
    np.testing.assert_allclose(pool.stream(other)()[0], conv.expected(other), rtol=1e-6)
    assert len(pool.sessions()) == 2


def _nonzero_model(path: Path) -> Path:
    """y = NonZero(x): how many entries y has only the run tells."""
    graph = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["y"])],
        "nonzero",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [1, "count"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_an_output_sized_by_the_run_is_refused_with_cuda_graphs(tmp_path: Path) -> None:
    model = Sessions(_nonzero_model(tmp_path / "nonzero.onnx"))
    feeds = {"x": np.array([0, 1, 0, 2, 3, 0], np.float32)}
    with pytest.raises(BackendError) as raised:
        model.pool(cuda_graph=True).stream(feeds)
    assert raised.value.kind == "unsupported" and "\n" not in raised.value.message
    assert raised.value.message.startswith("CUDA graphs replay fixed device buffers, but output")
    plain = streams.binding_plan(model.loaded, feeds, cuda_graph=False)
    assert plain.sized_by_run == ("y",) and plain.bound_once() == ("x", "y")
    np.testing.assert_array_equal(model.pool(cuda_graph=False).stream(feeds)()[0], [[1, 3, 4]])
