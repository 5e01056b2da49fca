"""The record's ``accelerator`` part: what a cell on a GPU or NPU backend actually ran on."""

from __future__ import annotations

from dataclasses import dataclass

from edgebench.results.json_values import RecordPart


@dataclass
class AcceleratorRun(RecordPart):
    """The device a backend ran on, as the framework reported it, and what it did there.
    Stored with each field as a key; fields the framework does not report stay None."""

    #: The API the backend drove (``Vulkan``, ``OpenCL``, ``NNAPI``, ...).
    api: str
    #: The device's name as its driver reports it (``llvmpipe (LLVM 15.0.6, 256 bits)``).
    device: str | None = None
    #: ``discrete``, ``integrated``, ``virtual``, ``cpu`` (a driver that runs on the CPU), ...
    device_type: str | None = None
    #: A software implementation (lavapipe, llvmpipe, SwiftShader, pocl): its latency says
    #: nothing about a chip, so the cell is treated like an emulated one.
    software: bool = False
    driver: str | None = None
    api_version: str | None = None
    #: The precision the backend computed in (``fp16`` when the GPU stored or computed in
    #: half precision, whatever the cell asked for).
    precision: str | None = None
    #: Ops the accelerator ran, of all the model's ops, where the framework says.
    delegated_ops: int | None = None
    total_ops: int | None = None
    #: Device memory the cell used, or why it is not known.
    device_memory_mb: float | None = None
    device_memory_unavailable: str | None = None
    #: What the stage split means on this backend (``extract() includes the upload and the
    #: download``), when it differs from the CPU's.
    stages_note: str | None = None
    #: Building the engine (TensorRT, ONNX Runtime's TensorRT provider): how long it took in
    #: this cell, and ``hit`` (loaded from the device's engine cache), ``miss`` (built and
    #: stored) or ``off`` (built, not stored).
    engine_build_ms: float | None = None
    engine_cache: str | None = None
    #: Whether the inference was captured into a CUDA graph and replayed (None: not a CUDA cell).
    cuda_graph: bool | None = None
    #: Nodes per place they ran (ONNX Runtime's execution providers, TensorRT's GPU/DLA), as
    #: the framework reports it: a node left on the CPU shows here.
    placement: dict[str, int] | None = None

    def describe(self) -> str:
        parts = [self.api]
        if self.device:
            parts.append(self.device + (" (software)" if self.software else ""))
        if self.driver:
            parts.append(f"driver {self.driver}")
        if self.precision:
            parts.append(self.precision)
        if self.delegated_ops is not None and self.total_ops is not None:
            parts.append(f"{self.delegated_ops}/{self.total_ops} ops delegated")
        if self.placement:
            parts.append(" ".join(f"{where} {n}" for where, n in self.placement.items()))
        if self.engine_build_ms is not None:
            cache = {"hit": ", from the engine cache", "miss": ", now cached"}
            parts.append(
                f"engine built in {self.engine_build_ms / 1000:.1f} s"
                + cache.get(self.engine_cache or "", "")
            )
        if self.cuda_graph:
            parts.append("CUDA Graph")
        return ", ".join(parts)
