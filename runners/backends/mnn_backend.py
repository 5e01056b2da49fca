"""MNN through its Interpreter/Session API; a control-flow model through its Module API."""

from __future__ import annotations

import contextlib
from typing import Any, Dict, List, Optional

from ..protocol.errors import BackendError
from ..protocol.input_spec import InputSpec
from .accelerator import CPU, accelerator_report, fallback, native_output
from .base import Backend, Stream, check_precision, first_line

FRAMEWORK = "mnn"
REQUIRES = ("MNN",)
#: Selected by the session's backend; only a wheel built with that backend has it.
ACCELERATORS = ("opencl", "vulkan", "cuda")

#: The session ``backend`` name, MNN's forward type number and the API, per compute backend.
_FORWARD = {
    "cpu": ("CPU", 0, "CPU"),
    "opencl": ("OPENCL", 3, "OpenCL"),
    "vulkan": ("VULKAN", 7, "Vulkan"),
    "cuda": ("CUDA", 2, "CUDA"),
}
#: Interpreter.getSessionInfo codes (Interpreter.hpp SessionInfoCode).
_INFO_BACKENDS = 2
#: MNN_FORWARD_CPU_EXTENSION: the CPU backend with the CPU's SIMD extensions.
_CPU_TYPES = (0, 13)
#: On a GPU, numThread is MNN's GPU mode: 4 is MNN_GPU_TUNING_WIDE, MNN's own default.
_GPU_MODE = 4

# MNN session precision names: fp32 keeps "normal"; fp16 asks for "low" (fp16 where the CPU has it).
# int8 models need no switch: the CPU backend runs in int8 every op whose tensors carry the
# calibrated scales, and "normal" keeps the ops it cannot in fp32 (not fp16). int8-weights
# models hold int8 weights that the runtime expands to float at load: they compute like fp32.
_PRECISION = {"fp32": "normal", "fp16": "low", "int8": "normal", "int8-weights": "normal"}


BOUNDARIES = {
    "copy_in": "Tensor.copyFrom of a host tensor into each session input",
    "compute": "Interpreter.runSession",
    "copy_out": "copyToHostTensor of each output, then a numpy copy",
}
#: A control-flow model, run through the Module API (MNN computes in forward, eagerly).
MODULE_BOUNDARIES = {
    "copy_in": "VARP.write of each input placeholder",
    "compute": "Module.forward",
    "copy_out": "VARP.read of each output, then a numpy copy",
}


def session_config(threads: int, precision: str, compute_backend: str = CPU) -> Dict[str, Any]:
    """The session settings for a cell (the op profiler's session uses them too)."""
    if compute_backend == CPU:
        return {"numThread": int(threads), "precision": _PRECISION[precision], "backend": "CPU"}
    # GPU backends take "normal" as fp16 where the device has it: fp32 asks for "high".
    mnn_precision = "high" if precision == "fp32" else _PRECISION[precision]
    backend_name = _FORWARD[compute_backend][0]
    return {"numThread": _GPU_MODE, "precision": mnn_precision, "backend": backend_name}


def session_forward_type(interpreter: Any, session: Any) -> int:
    """The forward type of the session's first pipeline, as MNN chose it."""
    return int(interpreter.getSessionInfo(session, _INFO_BACKENDS))


class MnnBackend(Backend):
    name = FRAMEWORK
    precisions = ("fp32", "fp16", "int8", "int8-weights")

    def __init__(self) -> None:
        import MNN

        self._mnn = MNN
        self._interpreter: Optional[Any] = None
        self._config: Dict[str, Any] = {}
        self._sessions: List[Any] = []
        self._modules: List[Any] = []
        self._model_path = ""

    def version(self) -> str:
        mnn = self._mnn
        return str(mnn.version() if hasattr(mnn, "version") else getattr(mnn, "__version__", "?"))

    def load(self, model_path: str, threads: int, precision: str, options: Dict[str, Any]) -> None:
        check_precision(self, precision)
        mnn = self._mnn
        self._model_path = model_path
        try:
            self._interpreter = mnn.Interpreter(model_path)
        except Exception as exc:
            raise BackendError(
                "model_load", "MNN could not read the model: %s" % first_line(str(exc)), str(exc)
            ) from exc
        self._config = session_config(threads, precision, self.compute_backend)
        self._main = self._new_session()

    def _new_session(self) -> Any:
        assert self._interpreter is not None
        with native_output(capture=self.compute_backend != CPU) as said:
            session = self._interpreter.createSession(self._config)
        if session is None:
            raise BackendError("model_load", "MNN could not create a session for the model")
        self._sessions.append(session)
        if self.compute_backend != CPU:
            self._check_forward_type(session, said.matching("backend", "Backend"))
        return session

    def _check_forward_type(self, session: Any, said: List[str]) -> None:
        """MNN creates a CPU session, saying so only on its log, when the wheel lacks the
        backend asked for (or its device is missing): the session's forward type tells."""
        wanted = _FORWARD[self.compute_backend][1]
        got = session_forward_type(self._interpreter, session)
        if got == wanted:
            return
        where = "the CPU" if got in _CPU_TYPES else "forward type %d" % got
        name = _FORWARD[self.compute_backend][0]
        words = "; ".join(dict.fromkeys(said)) or "no %s backend in this MNN build" % name
        raise fallback(
            FRAMEWORK,
            self.compute_backend,
            "%s (the session runs on %s, forward type %d)" % (words, where, got),
        )

    def accelerator_report(self) -> Optional[Dict[str, Any]]:
        if self.compute_backend == CPU:
            return None
        return accelerator_report(
            _FORWARD[self.compute_backend][2],
            # "high" keeps fp32 on MNN's GPU backends; "low" is fp16 where the device has it.
            precision="fp32" if self._config["precision"] == "high" else None,
            device_memory_unavailable=(
                "MNN's session memory (getSessionInfo MEMORY) does not split the device's "
                "share from the host's"
            ),
            stages_note=(
                "runSession can return with work still queued on the device and "
                "copyToHostTensor waits for it: compute and copy_out split where the queue "
                "ends, not where the device's compute does"
            ),
        )

    def model_inputs(self) -> List[InputSpec]:
        assert self._interpreter is not None
        specs = []
        for name, tensor in self._interpreter.getSessionInputAll(self._main).items():
            specs.append(InputSpec(name, [int(d) for d in tensor.getShape()], "float32"))
        return specs

    def output_names(self) -> List[str]:
        assert self._interpreter is not None
        return list(self._interpreter.getSessionOutputAll(self._main).keys())

    def reuse_streams(self) -> None:
        # The next stream resizes the first session instead of creating one (a shape change).
        self._main_used = False

    def make_stream(self, feeds: Dict[str, Any]) -> Stream:
        import numpy as np

        mnn = self._mnn
        interpreter = self._interpreter
        assert interpreter is not None
        session = self._main if not getattr(self, "_main_used", False) else self._new_session()
        self._main_used = True
        caffe = mnn.Tensor_DimensionType_Caffe
        inputs = interpreter.getSessionInputAll(session)
        staged = []
        for name, value in feeds.items():
            tensor = inputs[name]
            if list(tensor.getShape()) != list(value.shape):
                interpreter.resizeTensor(tensor, tuple(value.shape))
        with native_output() as said:
            interpreter.resizeSession(session)
        unsized = said.matching("Compute Shape Error")
        if unsized:
            return self._module_stream(feeds, unsized)
        # The binding has no host type for int8 (a tensor's getDataType() is None): the Session
        # API cannot copy such an input or output (an int8 .tflite's twin keeps int8 io), the
        # Module API can (an int32 placeholder in, an int8 variable read out).
        outputs = interpreter.getSessionOutputAll(session)
        uncopyable = [
            "%s is int8, which MNN's Python binding cannot copy through a session" % name
            for name, tensor in [*inputs.items(), *outputs.items()]
            if tensor.getDataType() is None
        ]
        if uncopyable:
            return self._module_stream(feeds, uncopyable)
        for name, value in feeds.items():
            # MNN keeps integer inputs (ONNX int64 included) as int32 tensors.
            integer = np.dtype(value.dtype).kind in "iub"
            host = mnn.Tensor(
                tuple(value.shape),
                mnn.Halide_Type_Int if integer else mnn.Halide_Type_Float,
                value.astype(np.int32 if integer else np.float32),
                _layout(inputs[name], caffe),
            )
            staged.append((inputs[name], host))
        fetch = []
        for name in self.output_names():
            device_tensor = outputs[name]
            shape = tuple(device_tensor.getShape())
            zeros = np.zeros(shape, np.float32)
            host = mnn.Tensor(shape, mnn.Halide_Type_Float, zeros, _layout(device_tensor, caffe))
            fetch.append((device_tensor, host, shape))

        def copy_in() -> None:
            for device_tensor, host in staged:
                device_tensor.copyFrom(host)

        def compute() -> None:
            code = interpreter.runSession(session)
            if code:  # an ErrorCode: resizeSession says True even when the shapes cannot work
                reason = " (the model cannot take these input shapes)" if code == 3 else ""
                raise BackendError("inference", "MNN runSession returned %s%s" % (code, reason))

        def copy_out() -> List[Any]:
            results = []
            for device_tensor, host, shape in fetch:
                device_tensor.copyToHostTensor(host)
                data = host.getNumpyData() if hasattr(host, "getNumpyData") else host.getData()
                results.append(np.array(data, dtype=np.float32).reshape(shape))
            return results

        return Stream(copy_in, compute, copy_out, BOUNDARIES)

    def _module_stream(self, feeds: Dict[str, Any], why: List[str]) -> Stream:
        """A model the Session API cannot run (``why``) goes through MNN's Module API: one it
        cannot size at any input shape (control flow: MNNConvert keeps ONNX If and Loop as MNN
        control-flow ops; the Module API executes the branch each inference takes), or one with
        an int8 input or output."""
        import numpy as np

        if self.compute_backend != CPU:
            raise BackendError(
                "unsupported",
                "MNN's Session API cannot run this model (%s); edgebench runs such models "
                "through MNN's Module API on the CPU only" % "; ".join(why),
            )
        nn, expr = self._mnn.nn, self._mnn.expr
        names = self.output_names()
        runtime = nn.create_runtime_manager((dict(self._config),))
        module = nn.load_module_from_file(
            self._model_path, list(feeds), names, runtime_manager=runtime
        )
        self._modules.append(module)
        variables = []
        for value in feeds.values():
            integer = np.dtype(value.dtype).kind in "iub"
            variable = expr.placeholder(
                list(value.shape), expr.NCHW, expr.int if integer else expr.float
            )
            variables.append((variable, value.astype(np.int32 if integer else np.float32)))
        produced: List[Any] = []

        def copy_in() -> None:
            for variable, value in variables:
                variable.write(value)

        def compute() -> None:
            produced[:] = module.forward([variable for variable, _ in variables]) or []
            if len(produced) != len(names):
                raise BackendError(
                    "inference",
                    "MNN's Module API computed %d of the model's %d outputs (%s)"
                    % (len(produced), len(names), "; ".join(why)),
                )

        def copy_out() -> List[Any]:
            return [np.array(out.read(), dtype=np.float32) for out in produced]

        return Stream(copy_in, compute, copy_out, MODULE_BOUNDARIES)

    def close(self) -> None:
        self._modules = []
        interpreter = self._interpreter
        if interpreter is not None:  # the sessions are its own: there are none without it
            for session in self._sessions:
                with contextlib.suppress(Exception):
                    interpreter.releaseSession(session)
        self._sessions = []
        self._interpreter = None


BACKEND = MnnBackend


def _layout(tensor: Any, default: Any) -> Any:
    """The host tensor's dimension type: the session tensor's own, so that copyFrom and
    copyToHostTensor copy the data as it is. A model MNNConvert made from a .tflite has NHWC
    (Tensorflow) tensors, whose shapes a Caffe host tensor would read as NCHW and transpose."""
    get = getattr(tensor, "getDimensionType", None)
    return get() if get is not None else default
