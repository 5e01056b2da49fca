"""The contract every framework backend of the on-device runner fulfils.

Runs on the device: Python 3.8+, stdlib + numpy + the framework only.
"""

from __future__ import annotations

import contextlib
import traceback
from typing import (
    Any,
    Callable,
    ContextManager,
    Dict,
    Iterator,
    List,
    Optional,
    Tuple,
    Type,
)

from ..protocol.backend_options import OptionsError, Opts
from ..protocol.errors import BackendError
from ..protocol.input_spec import InputSpec


@contextlib.contextmanager
def inference_errors(what: str) -> Iterator[None]:
    """Any other exception inside is the cell's ``inference`` error, saying ``what`` failed
    (a BackendError or MemoryError passes as it is: the runner reports those by their kind)."""
    try:
        yield
    except (BackendError, MemoryError):
        raise
    except Exception as exc:
        raise BackendError(
            "inference", "%s failed: %s" % (what, exc), traceback.format_exc()
        ) from exc


#: The stages of one inference, in order; docs/profiling.md says what each covers per framework.
STAGES = ("copy_in", "compute", "copy_out")


class Stream:
    """One inference on prepared inputs, split into the stages the framework's API separates.

    Calling it runs the three stages in order and returns the outputs (a list of numpy arrays
    in the model's ONNX layout). ``boundaries`` says, per stage, what the framework does in it.
    ``device_stage_ns``, where given, returns the last call's (copy_in, compute, copy_out) as
    the device timed them (CUDA events): an accelerator whose stages are queued work, so the
    host's clock between the calls would time the queueing, not the work.
    """

    def __init__(
        self,
        copy_in: Callable[[], None],
        compute: Callable[[], None],
        copy_out: Callable[[], List[Any]],
        boundaries: Dict[str, str],
        device_stage_ns: Optional[Callable[[], Tuple[int, int, int]]] = None,
    ) -> None:
        self.copy_in = copy_in
        self.compute = compute
        self.copy_out = copy_out
        self.boundaries = boundaries
        self.device_stage_ns = device_stage_ns

    def __call__(self) -> List[Any]:
        self.copy_in()
        self.compute()
        return self.copy_out()


class Backend:
    """One inference framework.

    Lifecycle: ``load`` once, then ``make_stream`` once per concurrent stream; each stream is a
    ``Stream`` (or any zero-argument callable) that runs one inference on fixed inputs and
    returns the outputs as a list of numpy arrays (only the last call's outputs are inspected).
    ``make_stream`` with inputs of another shape resizes, where the model allows it.
    """

    #: The framework name (its module's FRAMEWORK), for messages.
    name = ""
    precisions: Tuple[str, ...] = ("fp32",)
    #: Why one loaded model cannot serve several concurrent streams (None: it can, and
    #: ``make_stream`` shares the weights between them: --instances N in shared mode).
    no_shared_instances: Optional[str] = None
    #: The compute backend the cell asked for, set before ``load``: ``cpu`` or one of the
    #: accelerators its module declares (ACCELERATORS). ``load`` raises BackendError
    #: ``unsupported`` when the device has none, and ``fallback`` when the framework would
    #: run on the CPU instead.
    compute_backend = "cpu"

    def version(self) -> str:
        raise NotImplementedError

    def load(self, model_path: str, threads: int, precision: str, options: Dict[str, Any]) -> None:
        raise NotImplementedError

    def read_options(self, kind: Type[Opts], options: Dict[str, Any]) -> Opts:
        """``options`` (the spec's, with the runner's ``streams``) as ``kind``, the typed
        options this backend reads; a ``bad_spec`` error naming the key when malformed."""
        try:
            return kind.from_json(options, "%s on %s" % (self.name, self.compute_backend))
        except OptionsError as exc:
            raise BackendError("bad_spec", str(exc)) from None

    def model_inputs(self) -> List[InputSpec]:
        """Inputs as the framework sees them; dynamic dims are reported as -1."""
        raise NotImplementedError

    def output_names(self) -> List[str]:
        raise NotImplementedError

    def make_stream(self, feeds: Dict[str, Any]) -> Callable[[], List[Any]]:
        raise NotImplementedError

    def window_hooks(self) -> List[ContextManager[Any]]:
        """Timed-region hooks this backend needs around the timed window, entered after the
        telemetry's (so innermost) and left before them: a device sync that drains queued work
        before the window closes, a profiler started and stopped with it. Optional."""
        return []

    def accelerator_report(self) -> Optional[Dict[str, Any]]:
        """After the first inference on an accelerator: what actually ran, as
        ``accelerator.accelerator_report`` builds it (None on the CPU)."""
        return None

    def device_memory_used_bytes(self) -> Optional[int]:
        """The accelerator's memory in use now, where its driver says (None: unknown; every
        CPU backend). --instances reads it after each instance is ready."""
        return None

    def reuse_streams(self) -> None:
        """Let the next ``make_stream`` take over the earlier streams' state (a shape change
        resizes the one session instead of making another); optional."""

    def close(self) -> None:
        """Release framework objects; optional."""


def check_precision(backend: Backend, precision: str) -> None:
    if precision not in backend.precisions:
        raise BackendError(
            "unsupported",
            "%s does not support precision %s here (supported: %s)"
            % (backend.name, precision, ", ".join(backend.precisions)),
        )


def optional_int(value: Optional[Any]) -> Optional[int]:
    return None if value is None else int(value)


def first_line(text: str, limit: int = 300) -> str:
    """The first non-empty line of a framework's error, for a one-line message."""
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            return line[:limit]
    return "no reason given"
