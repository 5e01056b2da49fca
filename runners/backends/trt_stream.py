"""One TensorRT stream of inferences: an execution context on its own CUDA stream (and its own
optimization profile, where the engine has one per context), pinned host and device buffers
for every input and output, and CUDA events between the stages.

copy_in: the feed into its pinned buffer (host), then cudaMemcpyAsync host to device per input.
compute: ``execute_async_v3`` (or the launch of the CUDA graph captured from one).
copy_out: cudaMemcpyAsync device to host per output, a wait for the stream, numpy copies.
Events are recorded before copy_in's copies, after them, after compute and after copy_out's
copies, so ``device_stage_ns`` gives the three stages as the GPU timed them.

Runs on the device: Python 3.8+, numpy, the tensorrt module (through the engine) and
cuda_runtime.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..protocol.errors import BackendError

Cuda = Any  # cuda_runtime.CudaRuntime (imported by the backend: the runner's import roots vary)


def host_view(pointer: int, shape: Sequence[int], dtype: Any) -> np.ndarray:
    """A numpy array over ``pointer`` (pinned host memory this stream owns)."""
    count = int(np.prod(shape)) if len(shape) else 1
    size = max(count * np.dtype(dtype).itemsize, 1)
    raw = (ctypes.c_uint8 * size).from_address(pointer)
    return np.frombuffer(raw, dtype=dtype, count=count).reshape(tuple(shape))


class TensorBuffers:
    """A pinned host buffer and a device buffer of one I/O tensor."""

    def __init__(self, cuda: Cuda, shape: Sequence[int], dtype: Any) -> None:
        self.nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize if len(shape) else 0
        self.nbytes = self.nbytes or np.dtype(dtype).itemsize
        self.host = cuda.host_alloc(self.nbytes)
        try:
            self.device = cuda.malloc(self.nbytes)
        except Exception:
            cuda.free_host(self.host)
            raise
        self.array = host_view(self.host, shape, dtype)


class EngineStream:
    """One execution context of ``engine`` serving inferences on fixed ``feeds``."""

    def __init__(
        self,
        trt: Any,
        cuda: Cuda,
        engine: Any,
        feeds: Dict[str, Any],
        output_names: List[str],
        errors: Callable[[], List[str]],
        profile_index: int = 0,
    ) -> None:
        self.cuda = cuda
        self.errors = errors
        self.output_names = output_names
        self.buffers: Dict[str, TensorBuffers] = {}
        self.events: List[int] = []
        self.graph: Optional[Tuple[int, int]] = None
        self.stream = cuda.stream_create()
        try:
            self.context = engine.create_execution_context()
            if self.context is None:
                why = "tensorrt made no execution context: %s" % self._why()
                raise BackendError("inference", why)
            self.profile_index = profile_index
            if profile_index:
                self._use_profile(profile_index)
            self._bind(trt, engine, feeds)
            self.events = [cuda.event_create() for _ in range(4)]
        except BaseException:
            self.close()
            raise

    def _use_profile(self, index: int) -> None:
        """Select optimization profile ``index`` (before the input shapes are set)."""
        if not self.context.set_optimization_profile_async(index, self.stream):
            why = "tensorrt did not select optimization profile %d: %s" % (index, self._why())
            raise BackendError("inference", why)
        self.cuda.stream_synchronize(self.stream)

    def _bind(self, trt: Any, engine: Any, feeds: Dict[str, Any]) -> None:
        names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
        inputs = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        self.feeds: List[Tuple[Any, TensorBuffers]] = []
        for name in inputs:
            dtype = trt.nptype(engine.get_tensor_dtype(name))
            value = np.asarray(feeds[name], dtype=dtype, order="C")
            if not self.context.set_input_shape(name, tuple(value.shape)):
                raise BackendError(
                    "bad_spec",
                    "tensorrt refuses shape %s for input %r: %s"
                    % (list(value.shape), name, self._why()),
                )
            buffers = self.buffers[name] = TensorBuffers(self.cuda, value.shape, dtype)
            self.feeds.append((value, buffers))
        for name in self.output_names:
            shape = [int(d) for d in self.context.get_tensor_shape(name)]
            if any(d < 0 for d in shape):
                raise BackendError(
                    "unsupported",
                    "output %r has a data-dependent shape %s: the TensorRT backend needs output "
                    "shapes known before the inference" % (name, shape),
                )
            dtype = trt.nptype(engine.get_tensor_dtype(name))
            self.buffers[name] = TensorBuffers(self.cuda, shape, dtype)
        for name, buffers in self.buffers.items():
            self.context.set_tensor_address(name, buffers.device)

    def _why(self) -> str:
        errors = self.errors()
        return errors[-1] if errors else "no error logged"

    def copy_in(self) -> None:
        cuda, stream = self.cuda, self.stream
        for value, buffers in self.feeds:
            np.copyto(buffers.array, value)
        cuda.event_record(self.events[0], stream)
        for _, buffers in self.feeds:
            cuda.copy_to_device(buffers.device, buffers.host, buffers.nbytes, stream)
        cuda.event_record(self.events[1], stream)

    def compute(self) -> None:
        if self.graph is not None:
            self.cuda.graph_launch(self.graph[1], self.stream)
        elif not self.context.execute_async_v3(self.stream):
            raise BackendError("inference", "execute_async_v3 failed: %s" % self._why())
        self.cuda.event_record(self.events[2], self.stream)

    def copy_out(self) -> List[Any]:
        cuda, stream = self.cuda, self.stream
        outputs = [self.buffers[name] for name in self.output_names]
        for buffers in outputs:
            cuda.copy_to_host(buffers.host, buffers.device, buffers.nbytes, stream)
        cuda.event_record(self.events[3], stream)
        cuda.event_synchronize(self.events[3])
        return [buffers.array.copy() for buffers in outputs]

    def device_stage_ns(self) -> Tuple[int, int, int]:
        """The last inference's copy_in, compute and copy_out as CUDA events timed them."""
        first, copied, computed, done = self.events
        elapsed = self.cuda.elapsed_ns
        return elapsed(first, copied), elapsed(copied, computed), elapsed(computed, done)

    def capture_graph(self) -> None:
        """Capture one ``execute_async_v3`` into a CUDA graph, replayed by ``compute`` from
        now on. TensorRT wants one plain enqueue first (it settles its resources then)."""
        if not self.context.execute_async_v3(self.stream):
            raise BackendError("inference", "execute_async_v3 failed: %s" % self._why())
        self.cuda.stream_synchronize(self.stream)
        self.cuda.begin_capture(self.stream)
        enqueued = False
        try:
            enqueued = self.context.execute_async_v3(self.stream)
        finally:
            try:
                graph = self.cuda.end_capture(self.stream)
            except Exception as exc:
                raise BackendError(
                    "unsupported",
                    "this engine cannot be captured into a CUDA graph: %s (%s)"
                    % (self._why(), exc),
                ) from exc
        if not enqueued or not graph:
            if graph:
                self.cuda.graph_destroy(graph)
            raise BackendError(
                "unsupported",
                "this engine cannot be captured into a CUDA graph: %s" % self._why(),
            )
        try:
            self.graph = (graph, self.cuda.graph_instantiate(graph))
        except Exception as exc:
            self.cuda.graph_destroy(graph)
            raise BackendError(
                "unsupported", "the captured CUDA graph does not instantiate: %s" % exc
            ) from exc

    def close(self) -> None:
        """Free the graph, events, buffers and stream (each once)."""
        cuda = self.cuda
        if self.graph is not None:
            graph, executable = self.graph
            self.graph = None
            cuda.graph_exec_destroy(executable)
            cuda.graph_destroy(graph)
        for event in self.events:
            cuda.event_destroy(event)
        self.events = []
        for buffers in self.buffers.values():
            cuda.free(buffers.device)
            cuda.free_host(buffers.host)
        self.buffers = {}
        self.context = None
        if self.stream:
            cuda.stream_destroy(self.stream)
            self.stream = 0
