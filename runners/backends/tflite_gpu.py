"""LiteRT on its GPU accelerator: a ``CompiledModel`` with ``HardwareAccelerator.GPU`` (the
ai-edge-litert wheel ships a WebGPU accelerator that runs over Vulkan, Metal or D3D12).

LiteRT says why it found no GPU only on its log ("Failed to initialize WebGPU environment:
INTERNAL: No adapters found"), and raises an exception naming a source line: the log line is
the cell's reason. Runs on the device: Python 3.8+, numpy and ai_edge_litert.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ..protocol.errors import BackendError
from ..protocol.io_map import IoMap, TensorMap
from .accelerator import NativeOutput, accelerator_report, native_output
from .base import Stream, first_line

API = "LiteRT GPU"
BOUNDARIES = {
    "copy_in": "TensorBuffer.write of each input",
    "compute": "CompiledModel.run_by_index",
    "copy_out": "TensorBuffer.read of each output (a copy)",
}
#: ``ERROR: [delegate_webgpu.cc:359] `` before the words of a LiteRT log line.
_LOG_PREFIX = re.compile(r"^ERROR:\s*(?:\[[^\]]*\]\s*)?")


def compile_on_gpu(model_path: str) -> Any:
    """The model compiled for LiteRT's GPU accelerator; ``unsupported`` with LiteRT's own
    words when it finds no GPU."""
    try:
        from ai_edge_litert.compiled_model import CompiledModel, HardwareAccelerator
    except ImportError as exc:
        raise BackendError(
            "unsupported",
            "LiteRT's GPU accelerator needs ai-edge-litert's CompiledModel "
            "(pip install ai-edge-litert; tflite_runtime has none)",
            str(exc),
        ) from exc
    failure: Optional[Exception] = None
    with native_output() as said:
        try:
            model = CompiledModel.from_file(model_path, hardware_accel=HardwareAccelerator.GPU)
        except Exception as exc:  # LiteRT raises RuntimeError naming only a source line
            failure = exc
    if failure is None:
        return model
    raise BackendError(
        "unsupported",
        "LiteRT could not run the model on a GPU: %s" % log_reason(said, failure),
        "\n".join([*said.lines[-40:], str(failure)]),
    )


def log_reason(said: NativeOutput, failure: Exception) -> str:
    """The first error line of LiteRT's log, without its level and source location."""
    for line in said.lines:
        match = _LOG_PREFIX.match(line.strip())
        words = line.strip()[match.end() :] if match else ""
        if match and words:
            return words[:300]
    return first_line(str(failure))


class GpuModel:
    """A compiled model and the mapping of the cell's tensors onto its signature."""

    def __init__(self, model_path: str, io: Optional[IoMap]) -> None:
        self.path = model_path
        self.model = compile_on_gpu(model_path)
        signature = next(iter(self.model.get_signature_list()))
        self.in_details = list(self.model.get_input_tensor_details(signature).values())
        self.out_details = list(self.model.get_output_tensor_details(signature).values())
        self.io = io or IoMap(
            [TensorMap({"name": d["name"], "shape": d["shape"]}) for d in self.in_details],
            [TensorMap({"name": d["name"], "shape": d["shape"]}) for d in self.out_details],
        )
        self.in_positions = _positions(self.in_details, self.io.inputs)
        self.out_positions = _positions(self.out_details, self.io.outputs)

    def make_stream(self, feeds: Dict[str, Any]) -> Stream:
        import numpy as np

        model = self.model
        inputs = model.create_input_buffers(0)
        outputs = model.create_output_buffers(0)
        staged = []
        for tensor, position in zip(self.io.inputs, self.in_positions):
            dtype = np.dtype(self.in_details[position]["dtype"])
            value = np.asarray(tensor.to_artifact(feeds[tensor.onnx_name]), dtype, order="C")
            staged.append((inputs[position], value))
        fetch = []
        for tensor, position in zip(self.io.outputs, self.out_positions):
            detail = self.out_details[position]
            shape = [int(d) for d in detail["shape"]]
            fetch.append((tensor, outputs[position], shape, np.dtype(detail["dtype"])))

        def copy_in() -> None:
            for buffer, value in staged:
                buffer.write(value)

        def compute() -> None:
            model.run_by_index(0, inputs, outputs)

        def copy_out() -> List[Any]:
            return [
                tensor.to_onnx(buffer.read(int(np.prod(shape)), dtype).reshape(shape))
                for tensor, buffer, shape, dtype in fetch
            ]

        return Stream(copy_in, compute, copy_out, BOUNDARIES)

    def report(self) -> Dict[str, Any]:
        """What LiteRT says ran: whether every op is on the GPU (it names no adapter)."""
        total = _operator_count(self.path)
        full = bool(self.model.is_fully_accelerated())
        return accelerator_report(
            API,
            delegated_ops=total if full else None,
            total_ops=total,
            device_memory_unavailable="LiteRT's Python API reports no device memory",
            stages_note=(
                None
                if full
                else "LiteRT runs the ops its GPU accelerator lacks on the CPU, inside "
                "run_by_index, and does not say how many"
            ),
        )

    def close(self) -> None:
        self.model = None


def _positions(details: List[Dict[str, Any]], tensors: List[TensorMap]) -> List[int]:
    """Each tensor's position in the signature: by name, else by its own position."""
    names = [d["name"] for d in details]
    positions = []
    for position, tensor in enumerate(tensors):
        if tensor.name in names:
            positions.append(names.index(tensor.name))
        elif position < len(details):
            positions.append(position)
        else:
            raise BackendError("model_load", "LiteRT model has no tensor %r" % tensor.name)
    return positions


def _operator_count(model_path: str) -> Optional[int]:
    """The ops of the model's main subgraph, read from the flatbuffer."""
    try:
        from ai_edge_litert import schema_py_generated as schema
    except ImportError:
        return None
    with open(model_path, "rb") as fh:
        data = fh.read()
    model = schema.Model.GetRootAs(data, 0)
    return int(model.Subgraphs(0).OperatorsLength()) if model.SubgraphsLength() else None
