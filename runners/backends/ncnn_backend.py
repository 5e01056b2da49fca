"""ncnn through its Python binding (Net + Extractor)."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from ..protocol.errors import BackendError
from ..protocol.input_spec import InputSpec
from ..protocol.io_map import IoMap, TensorMap
from ..protocol.ncnn_param import int8_layers
from . import ncnn_vulkan
from .accelerator import native_output
from .base import Backend, Stream, check_precision

FRAMEWORK = "ncnn"
REQUIRES = ("ncnn",)
#: The wheel has Vulkan compiled in (net.opt.use_vulkan_compute).
ACCELERATORS = ("vulkan",)


BOUNDARIES = {
    "copy_in": "Net.create_extractor and Extractor.input of Mats made once (no copy)",
    "compute": "Extractor.extract of every output: ncnn computes the layers lazily in extract",
    "copy_out": "Mat to numpy copy of each output",
}


class NcnnBackend(Backend):
    name = FRAMEWORK
    precisions = ("fp32", "fp16", "int8")

    def __init__(self) -> None:
        import ncnn

        self._ncnn = ncnn
        self._net: Optional[Any] = None
        self._io: Optional[IoMap] = None

    def version(self) -> str:
        return str(getattr(self._ncnn, "__version__", "?"))

    def load(self, model_path: str, threads: int, precision: str, options: Dict[str, Any]) -> None:
        check_precision(self, precision)
        weights = os.path.splitext(model_path)[0] + ".bin"
        io = IoMap.beside(model_path)
        if io is None:
            raise BackendError(
                "model_load",
                "ncnn needs io.json beside %s (blob names and shapes); convert with edgebench"
                % os.path.basename(model_path),
            )
        int8 = int8_layers(model_path)
        if int8 and precision != "int8":
            # Its int8 weights read as floats: garbage on x86, a crash in load_model on arm64.
            raise BackendError(
                "model_load",
                "%s is an int8 ncnn model (%s%s with int8_scale_term): it runs only at int8"
                % (os.path.basename(model_path), int8[0], _more(len(int8) - 1)),
            )
        self._io = io
        vulkan = self.compute_backend == "vulkan"
        if vulkan:
            ncnn_vulkan.require_device(self._ncnn, precision)
        net = self._ncnn.Net()
        net.opt.use_vulkan_compute = vulkan
        fp16 = precision == "fp16"
        # Explicit: ncnn's own defaults keep activations in fp16 on many CPUs (and on a Vulkan
        # device that has it), which would make an "fp32" cell silently half precision.
        net.opt.use_fp16_storage = fp16
        net.opt.use_fp16_arithmetic = fp16
        net.opt.use_fp16_packed = fp16
        net.opt.use_bf16_storage = False  # bf16 storage would also turn Vulkan off
        # On by default in ncnn, where it acts on layers whose weights are stored as int8; set
        # from the cell's precision, so that only an int8 cell runs int8 kernels.
        net.opt.use_int8_inference = precision == "int8"
        net.opt.num_threads = int(threads)
        with native_output(capture=vulkan) as said:
            parsed = net.load_param(model_path)
        if parsed != 0:
            raise BackendError("model_load", "ncnn could not parse %s" % model_path)
        if vulkan:
            ncnn_vulkan.check_kept(net, said.lines)
        if os.path.isfile(weights) and net.load_model(weights) != 0:
            raise BackendError("model_load", "ncnn could not load weights %s" % weights)
        self._net = net

    def model_inputs(self) -> List[InputSpec]:
        assert self._io is not None
        return [InputSpec(t.onnx_name, t.onnx_shape, "float32") for t in self._io.inputs]

    def output_names(self) -> List[str]:
        assert self._io is not None
        return [t.onnx_name for t in self._io.outputs]

    def accelerator_report(self) -> Optional[Dict[str, Any]]:
        if self.compute_backend != "vulkan" or self._net is None:
            return None
        return ncnn_vulkan.report(self._net)

    def make_stream(self, feeds: Dict[str, Any]) -> Stream:
        import numpy as np

        ncnn = self._ncnn
        net, io = self._net, self._io
        assert net is not None and io is not None
        mats = []
        for tensor in io.inputs:
            value = _drop_batch(tensor, tensor.to_artifact(feeds[tensor.onnx_name]))
            # ncnn.Mat wraps the numpy buffer without owning it or keeping it alive: hold the
            # array in a name until the clone (which owns its data) is made.
            array = np.ascontiguousarray(value, np.float32)
            mats.append((tensor.name, ncnn.Mat(array).clone()))
        outputs: List[TensorMap] = list(io.outputs)

        # One Net serves every stream (each iteration makes its own extractor): shared weights.
        state: Dict[str, Any] = {}

        def copy_in() -> None:
            extractor = net.create_extractor()
            for name, mat in mats:
                extractor.input(name, mat)
            state["extractor"] = extractor

        def compute() -> None:
            # ncnn runs the layers lazily, inside extract: the extract calls are the compute.
            extracted = []
            for tensor in outputs:
                status, mat = state["extractor"].extract(tensor.name)
                if status != 0:
                    raise RuntimeError("ncnn could not extract blob %s" % tensor.name)
                extracted.append(mat)
            state["mats"] = extracted

        def copy_out() -> List[Any]:
            mats = state.pop("mats")
            copied = [tensor.to_onnx(np.array(mat)) for tensor, mat in zip(outputs, mats)]
            # The Mats, then the extractor, go before the next iteration: ncnn aborts when an
            # extractor outlives the Net's allocators (at close).
            del mats
            state.pop("extractor")
            return copied

        vulkan = self.compute_backend == "vulkan"
        return Stream(copy_in, compute, copy_out, ncnn_vulkan.BOUNDARIES if vulkan else BOUNDARIES)

    def close(self) -> None:
        if self._net is not None:
            self._net.clear()
        self._net = None


def _more(count: int) -> str:
    return " and %d more layer%s" % (count, "" if count == 1 else "s") if count else ""


def _drop_batch(tensor: TensorMap, value: Any) -> Any:
    # ncnn Mats carry no batch axis: [1,C,H,W] is fed as [C,H,W].
    if value.ndim >= 2 and value.shape[0] == 1 and value.ndim > 3:
        return value.reshape(value.shape[1:])
    return value


BACKEND = NcnnBackend
