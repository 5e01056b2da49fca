"""LiteRT (ai_edge_litert), falling back to the older tflite_runtime package."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..protocol.errors import BackendError
from ..protocol.input_spec import InputSpec
from ..protocol.io_map import IoMap, TensorMap
from .base import Backend, Stream, check_precision, first_line
from .tflite_gpu import GpuModel

FRAMEWORK = "tflite"
REQUIRES = ("ai_edge_litert", "tflite_runtime")
#: LiteRT's CompiledModel on its GPU accelerator; NNAPI is not selectable from Python.
ACCELERATORS = ("gpu",)


def _interpreter_class() -> Any:
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        from tflite_runtime.interpreter import Interpreter
    return Interpreter


BOUNDARIES = {
    "copy_in": "Interpreter.set_tensor of each input (a copy)",
    "compute": "Interpreter.invoke",
    "copy_out": "Interpreter.get_tensor of each output (a copy)",
}


class TfliteBackend(Backend):
    name = FRAMEWORK
    # fp16 and int8 are properties of the converted file (fp16 weights; int8 weights and
    # activations behind float inputs and outputs); the interpreter API is the same.
    precisions = ("fp32", "fp16", "int8")
    no_shared_instances = (
        "a LiteRT interpreter runs one invoke at a time, so every stream needs its own "
        "interpreter, with its own copy of the packed weights"
    )

    def __init__(self) -> None:
        self._cls = _interpreter_class()
        self._path = ""
        self._threads = 1
        self._io: Optional[IoMap] = None
        self._main: Optional[Any] = None
        self._gpu: Optional[GpuModel] = None
        self._gpu_models: List[GpuModel] = []

    def version(self) -> str:
        try:
            import ai_edge_litert

            return "ai_edge_litert " + str(getattr(ai_edge_litert, "__version__", "?"))
        except ImportError:
            import tflite_runtime

            return "tflite_runtime " + str(getattr(tflite_runtime, "__version__", "?"))

    def _interpreter(self) -> Any:
        interpreter = self._cls(model_path=self._path, num_threads=self._threads)
        interpreter.allocate_tensors()
        return interpreter

    def load(self, model_path: str, threads: int, precision: str, options: Dict[str, Any]) -> None:
        check_precision(self, precision)
        self._path = model_path
        self._threads = int(threads)
        if self.compute_backend == "gpu":
            self._gpu = GpuModel(model_path, IoMap.beside(model_path))
            self._io = self._gpu.io
            return
        try:
            main = self._main = self._interpreter()
        except Exception as exc:
            text = str(exc)
            kind = (
                "unsupported" if "Select TensorFlow op" in text or "Flex" in text else "model_load"
            )
            raise BackendError(
                kind, "LiteRT could not load the model: %s" % first_line(text), text
            ) from exc
        details_in = main.get_input_details()
        details_out = main.get_output_details()
        io = IoMap.beside(model_path)
        if io is None:
            io = IoMap(
                [TensorMap({"name": d["name"], "shape": list(d["shape"])}) for d in details_in],
                [TensorMap({"name": d["name"], "shape": list(d["shape"])}) for d in details_out],
            )
        self._io = io
        self._in_index = _indices(details_in, io.inputs)
        self._out_index = _indices(details_out, io.outputs)

    def model_inputs(self) -> List[InputSpec]:
        assert self._io is not None
        return [InputSpec(t.onnx_name, t.onnx_shape, "float32") for t in self._io.inputs]

    def output_names(self) -> List[str]:
        assert self._io is not None
        return [t.onnx_name for t in self._io.outputs]

    def accelerator_report(self) -> Optional[Dict[str, Any]]:
        return self._gpu.report() if self._gpu is not None else None

    def make_stream(self, feeds: Dict[str, Any]) -> Stream:
        if self._gpu is not None:
            # Like interpreters, a compiled model serves one stream: extra streams compile more.
            gpu = GpuModel(self._path, self._io) if self._gpu_models else self._gpu
            self._gpu_models.append(gpu)
            return gpu.make_stream(feeds)
        # An interpreter is not thread-safe: every extra stream gets its own.
        interpreter = self._main if self._main is not None else self._interpreter()
        self._main = None
        io = self._io
        assert io is not None
        staged = []
        for tensor, index in zip(io.inputs, self._in_index):
            staged.append((index, tensor.to_artifact(feeds[tensor.onnx_name])))
        outputs = list(zip(io.outputs, self._out_index))
        set_tensor = interpreter.set_tensor
        get_tensor = interpreter.get_tensor
        invoke = interpreter.invoke

        def copy_in() -> None:
            for index, value in staged:
                set_tensor(index, value)

        def copy_out() -> List[Any]:
            return [tensor.to_onnx(get_tensor(index)) for tensor, index in outputs]

        return Stream(copy_in, invoke, copy_out, BOUNDARIES)

    def close(self) -> None:
        for gpu in self._gpu_models:
            gpu.close()
        self._gpu_models = []
        self._gpu = None


def _indices(details: List[Dict[str, Any]], tensors: List[TensorMap]) -> List[int]:
    by_name = {d["name"]: d["index"] for d in details}
    indices = []
    for position, tensor in enumerate(tensors):
        if tensor.name in by_name:
            indices.append(by_name[tensor.name])
        elif position < len(details):
            indices.append(details[position]["index"])
        else:
            raise BackendError("model_load", "LiteRT model has no tensor %r" % tensor.name)
    return indices


BACKEND = TfliteBackend
