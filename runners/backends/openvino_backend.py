"""OpenVINO Runtime on the CPU plugin, or on its GPU or NPU plugin."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ..protocol.backend_options import BackendOptions
from ..protocol.errors import BackendError
from ..protocol.input_spec import InputSpec
from .accelerator import CPU, accelerator_report
from .base import Backend, Stream, check_precision, first_line

FRAMEWORK = "openvino"
REQUIRES = ("openvino",)
#: OpenVINO's device plugins, compiled for by name.
ACCELERATORS = ("gpu", "npu")
#: What a device plugin needs, for the line of a cell whose device is missing.
_PROVIDES = {
    "gpu": "an Intel GPU with its OpenCL driver (intel-opencl-icd)",
    "npu": "an Intel NPU with its driver",
}
#: Layers of the runtime model (their rt_info layerType) that compute nothing.
_NOT_COMPUTE = ("Input", "Output", "Const")

# int8: the model's FakeQuantize layers already run in int8; the rest stays f32.
_PRECISION_HINT = {"fp32": "f32", "fp16": "f16", "int8": "f32"}


def reason_line(text: str) -> str:
    """The informative line of an OpenVINO exception. Its message starts with where it was
    thrown ("Exception from src/inference/src/cpp/core.cpp:84:", "Check '...' failed at
    ...:219:"); the reason ("Error parsing start element tag at offset 41") comes last."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    reasons = [
        line
        for line in lines
        if not line.startswith("Exception from ") and not re.match(r"Check '.*' failed at ", line)
    ]
    return reasons[-1][:300] if reasons else first_line(text)


BOUNDARIES = {
    "copy_in": "copy into the infer request's own input tensors",
    "compute": "InferRequest.infer",
    "copy_out": "copy of each output tensor into a numpy array",
}


def compile_config(threads: int, precision: str, streams: int = 1) -> Dict[str, Any]:
    """The CPU plugin's settings for a cell (the op profiler adds PERF_COUNT to them)."""
    return {
        "INFERENCE_NUM_THREADS": int(threads),
        # One stream per concurrent request stream; LATENCY would pick one stream itself.
        "PERFORMANCE_HINT": "LATENCY" if streams == 1 else "THROUGHPUT",
        "NUM_STREAMS": streams,
        "INFERENCE_PRECISION_HINT": _PRECISION_HINT[precision],
    }


def device_config(precision: str, streams: int, device: str) -> Dict[str, Any]:
    """The settings for the GPU or NPU plugin: no CPU threads; the GPU plugin's own default
    precision is f16, so the cell's is asked for."""
    config: Dict[str, Any] = {"PERFORMANCE_HINT": "LATENCY" if streams == 1 else "THROUGHPUT"}
    if device == "GPU":
        config["INFERENCE_PRECISION_HINT"] = _PRECISION_HINT[precision]
        config["NUM_STREAMS"] = streams
    return config


class OpenVinoBackend(Backend):
    name = FRAMEWORK
    precisions = ("fp32", "fp16", "int8")

    def __init__(self) -> None:
        import openvino as ov

        self._ov = ov
        self._compiled: Optional[Any] = None
        self._core: Optional[Any] = None
        self._device = "CPU"

    def version(self) -> str:
        return str(self._ov.get_version()).split("-")[0]

    def load(self, model_path: str, threads: int, precision: str, options: Dict[str, Any]) -> None:
        check_precision(self, precision)
        core = self._core = self._ov.Core()
        streams = self.read_options(BackendOptions, options).streams
        config = compile_config(threads, precision, streams)
        if self.compute_backend != CPU:
            self._device = self._find_device(core)
            config = device_config(precision, streams, self._device)
        try:
            model = core.read_model(model_path)
            self._compiled = core.compile_model(model, self._device, config)
        except Exception as exc:
            text = str(exc)
            kind = "unsupported" if "not supported" in text.lower() else "model_load"
            raise BackendError(
                kind, "OpenVINO could not compile the model: %s" % reason_line(text), text
            ) from exc

    def _find_device(self, core: Any) -> str:
        wanted = self.compute_backend.upper()
        devices = list(core.available_devices)
        if any(d == wanted or d.startswith(wanted + ".") for d in devices):
            return wanted
        raise BackendError(
            "unsupported",
            "OpenVINO has no %s device here (it has %s): it needs %s"
            % (wanted, ", ".join(devices) or "none", _PROVIDES[self.compute_backend]),
        )

    def accelerator_report(self) -> Optional[Dict[str, Any]]:
        if self.compute_backend == CPU or self._compiled is None:
            return None
        compiled, core = self._compiled, self._core
        assert core is not None  # load made it before the compiled model
        try:
            name: Optional[str] = str(core.get_property(self._device, "FULL_DEVICE_NAME"))
        except Exception:  # a plugin without the property still ran the cell
            name = None
        precision = None
        if self._device == "GPU":
            hint = compiled.get_property("INFERENCE_PRECISION_HINT")
            precision = {"f32": "fp32", "f16": "fp16"}.get(str(hint.get_type_name()), str(hint))
        layers = [
            op.get_rt_info()["layerType"].astype(str)
            for op in compiled.get_runtime_model().get_ordered_ops()
        ]
        ops = [layer for layer in layers if layer not in _NOT_COMPUTE]
        return accelerator_report(
            "OpenVINO " + self._device,
            device=name,
            precision=precision,
            # One device plugin compiles every layer for itself or refuses the model.
            delegated_ops=len(ops),
            total_ops=len(ops),
            device_memory_unavailable="OpenVINO's Python API reports no device memory",
            stages_note=(
                "InferRequest.infer moves the request's host tensors to the device and back: "
                "compute includes both copies"
            ),
        )

    def model_inputs(self) -> List[InputSpec]:
        assert self._compiled is not None
        specs = []
        for port in self._compiled.inputs:
            shape = [d.get_length() if d.is_static else -1 for d in port.get_partial_shape()]
            dtype = port.get_element_type().to_dtype().name
            specs.append(InputSpec(port.get_any_name(), shape, dtype))
        return specs

    def output_names(self) -> List[str]:
        assert self._compiled is not None
        return [port.get_any_name() for port in self._compiled.outputs]

    def make_stream(self, feeds: Dict[str, Any]) -> Stream:
        # One compiled model, one infer request per stream: the requests share the weights.
        import numpy as np

        compiled = self._compiled
        assert compiled is not None
        request = compiled.create_infer_request()
        ports = list(compiled.outputs)
        staged = []
        for name, value in feeds.items():
            tensor = self._ov.Tensor(np.array(value, copy=True))  # the request's own memory
            request.set_tensor(name, tensor)
            staged.append((tensor.data, value))

        def copy_in() -> None:
            for target, value in staged:
                np.copyto(target, value)

        def copy_out() -> List[Any]:
            return [request.get_tensor(port).data.copy() for port in ports]

        return Stream(copy_in, request.infer, copy_out, BOUNDARIES)

    def close(self) -> None:
        self._compiled = None


BACKEND = OpenVinoBackend
