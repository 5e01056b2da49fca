"""ONNX Runtime's GPU streams: what each binds, once, and the session each runs on.

Every stream binds its inputs and outputs once, before its first run, to device buffers made
for it; each run only refills the inputs in place (``update_inplace``, the H2D copy). With CUDA
graphs this is what onnxruntime requires: a captured graph replays the device addresses it
was captured with, so the outputs are pre-allocated at shapes known before the run, and a
session's graph belongs to one stream (graph capture is not for concurrent runs of one
session), so each concurrent stream runs on a session of its own.

Runs on the device: Python 3.8+, stdlib + numpy + onnxruntime(-gpu).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..protocol.errors import BackendError
from .base import Stream, first_line

GPU_BOUNDARIES = {
    "copy_in": "OrtValue.update_inplace per input (H2D) into device buffers bound once",
    "compute": "InferenceSession.run_with_iobinding, outputs in device buffers bound once",
    "copy_out": "IOBinding.copy_outputs_to_cpu (D2H)",
}
#: Why one loaded model cannot serve several instances with CUDA graphs on.
GRAPHS_NOT_SHARED = (
    "with CUDA graphs each stream needs an onnxruntime session of its own (a captured graph "
    "replays one stream's device buffers): use --instance-mode separate"
)
#: onnxruntime's tensor types as numpy's.
_NUMPY_TYPES = {"float": "float32", "double": "float64"}

Signature = Tuple[Tuple[str, Tuple[int, ...], str], ...]


@dataclass(frozen=True)
class OutputBuffer:
    """An output pre-allocated on the device: its name, shape and numpy type."""

    name: str
    shape: Tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class BindingPlan:
    """What one stream binds once, before its first run, and what each run does.

    ``inputs`` are made on the device and bound once; each run refills them in place.
    ``fixed_outputs`` are pre-allocated on the device and bound once. ``sized_by_run`` are
    bound once to the device with no buffer: onnxruntime sizes them on each run (an output
    whose shape only the run tells; never with CUDA graphs). ``own_session``: the stream runs
    on a session no other live stream uses."""

    own_session: bool
    inputs: Tuple[str, ...]
    fixed_outputs: Tuple[OutputBuffer, ...]
    sized_by_run: Tuple[str, ...]

    def bound_once(self) -> Tuple[str, ...]:
        """Every input and output, in the order bound."""
        return self.inputs + tuple(o.name for o in self.fixed_outputs) + self.sized_by_run

    def refilled_per_run(self) -> Tuple[str, ...]:
        return self.inputs


def numpy_type(ort_type: str) -> str:
    """``tensor(float)`` -> ``float32``."""
    name = ort_type[len("tensor(") : -1] if ort_type.startswith("tensor(") else ort_type
    return _NUMPY_TYPES.get(name, name)


def _symbols(session: Any, feeds: Dict[str, Any]) -> Dict[str, int]:
    """The inputs' named free dimensions, as the feeds fix them."""
    known: Dict[str, int] = {}
    for node in session.get_inputs():
        shape = np.shape(feeds[node.name]) if node.name in feeds else ()
        for dim, size in zip(node.shape, shape):
            if isinstance(dim, str):
                known[dim] = int(size)
    return known


def _fixed_shape(shape: Sequence[Any], symbols: Dict[str, int]) -> Optional[Tuple[int, ...]]:
    dims = []
    for dim in shape:
        if isinstance(dim, int) and dim >= 0:
            dims.append(dim)
        elif isinstance(dim, str) and dim in symbols:
            dims.append(symbols[dim])
        else:
            return None
    return tuple(dims)


def binding_plan(session: Any, feeds: Dict[str, Any], cuda_graph: bool) -> BindingPlan:
    """The plan of a stream of ``session``'s model on ``feeds``. An output's shape is known
    when its dimensions are numbers or free dimensions an input names; with CUDA graphs an
    output whose shape only the run tells is refused in one line."""
    symbols = _symbols(session, feeds)
    fixed: List[OutputBuffer] = []
    sized_by_run: List[str] = []
    for node in session.get_outputs():
        shape = _fixed_shape(node.shape, symbols)
        if shape is not None:
            fixed.append(OutputBuffer(node.name, shape, numpy_type(node.type)))
            continue
        if cuda_graph:
            raise BackendError(
                "unsupported",
                "CUDA graphs replay fixed device buffers, but output %r has shape %s, known "
                "only after the run: run it without --cuda-graphs, or export the model with "
                "fixed output shapes" % (node.name, list(node.shape)),
            )
        sized_by_run.append(node.name)
    inputs = tuple(node.name for node in session.get_inputs() if node.name in feeds)
    return BindingPlan(cuda_graph, inputs, tuple(fixed), tuple(sized_by_run))


def signature(feeds: Dict[str, Any]) -> Signature:
    """The feeds' names, shapes and types: a stream with the same may take over buffers."""
    return tuple(
        (name, tuple(np.shape(value)), str(np.asarray(value).dtype))
        for name, value in sorted(feeds.items())
    )


class BoundSession:
    """A session with one stream's device buffers, bound once."""

    def __init__(
        self, ort: Any, session: Any, plan: BindingPlan, feeds: Dict[str, Any], device: str
    ) -> None:
        self.session = session
        self.plan = plan
        self.signature = signature(feeds)
        self.binding = session.io_binding()
        self.inputs: Dict[str, Any] = {}
        self.outputs: Dict[str, Any] = {}
        self.holder: Optional[Callable[[], Optional[Stream]]] = None
        for name in plan.inputs:
            self.inputs[name] = ort.OrtValue.ortvalue_from_numpy(feeds[name], device, 0)
            self.binding.bind_ortvalue_input(name, self.inputs[name])
        for out in plan.fixed_outputs:
            kind = np.dtype(out.dtype).type
            value = ort.OrtValue.ortvalue_from_shape_and_type(list(out.shape), kind, device, 0)
            self.outputs[out.name] = value
            self.binding.bind_ortvalue_output(out.name, value)
        for name in plan.sized_by_run:
            self.binding.bind_output(name, device, 0)

    def free(self) -> bool:
        """No live stream runs on it (the last one was released)."""
        return self.holder is None or self.holder() is None

    def stream(self, feeds: Dict[str, Any]) -> Stream:
        inputs = [(self.inputs[name], feeds[name]) for name in self.plan.refilled_per_run()]
        session, binding = self.session, self.binding

        def copy_in() -> None:
            for device_value, value in inputs:
                device_value.update_inplace(value)

        def compute() -> None:
            session.run_with_iobinding(binding)

        def copy_out() -> List[Any]:
            return binding.copy_outputs_to_cpu()

        made = Stream(copy_in, compute, copy_out, GPU_BOUNDARIES)
        self.holder = weakref.ref(made)
        return made


class StreamSessions:
    """The sessions a GPU cell's streams run on. Without CUDA graphs every stream shares the
    loaded session (onnxruntime sessions run concurrently). With them a stream takes over a
    released stream's session and buffers when its feeds have the same shapes and types
    (one graph, refilled in place), else a session of its own: the loaded one while no
    stream has it, then another made by ``make_session``."""

    def __init__(
        self,
        ort: Any,
        loaded: Any,
        make_session: Callable[[], Any],
        cuda_graph: bool,
        device: str = "cuda",
    ) -> None:
        self.ort = ort
        self.loaded = loaded
        self.make_session = make_session
        self.cuda_graph = cuda_graph
        self.device = device
        self.bound: List[BoundSession] = []

    def stream(self, feeds: Dict[str, Any]) -> Stream:
        plan = binding_plan(self.loaded, feeds, self.cuda_graph)
        if not plan.own_session:
            return BoundSession(self.ort, self.loaded, plan, feeds, self.device).stream(feeds)
        wanted = signature(feeds)
        for bound in self.bound:
            if bound.free() and bound.signature == wanted:
                return bound.stream(feeds)
        session = self.loaded if not self.bound else self._another()
        bound = BoundSession(self.ort, session, plan, feeds, self.device)
        self.bound.append(bound)
        return bound.stream(feeds)

    def sessions(self) -> List[Any]:
        """The sessions streams were bound on, once each (CUDA graphs)."""
        return list({id(b.session): b.session for b in self.bound}.values())

    def _another(self) -> Any:
        try:
            return self.make_session()
        except Exception as exc:  # onnxruntime raises its own exception types
            raise BackendError(
                "model_load",
                "onnxruntime could not make stream %d its own session (CUDA graphs): %s"
                % (len(self.bound) + 1, first_line(str(exc))),
                str(exc),
            ) from exc


def session_maker(ort: Any, model_path: str, options: Any, providers: List[Any]) -> Callable:
    """Another session of the loaded model, not profiled (the loaded session's profile of its
    first inference says where the nodes ran)."""

    def make() -> Any:
        options.enable_profiling = False
        return ort.InferenceSession(model_path, sess_options=options, providers=providers)

    return make
