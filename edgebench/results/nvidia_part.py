"""The record's ``nvidia`` part: the NVIDIA GPU, driver and libraries a cell ran with, the GPU
memory its process held, the GPU's clock and load over the window, and on a Jetson the power
mode and whether the clocks were locked (runners/nvidia_cell.py writes it; docs/nvidia-facts.md
says where each fact comes from)."""

from __future__ import annotations

from dataclasses import dataclass, field

from edgebench.results.json_values import RecordPart


@dataclass
class NvidiaState(RecordPart):
    """Stored with each field as a key; a fact the device could not give stays None, with its
    reason under ``unavailable``."""

    #: ``nvml`` (the driver's management library) or ``jetson`` (sysfs and the L4T tools).
    source: str | None = None
    gpu: str | None = None
    uuid: str | None = None
    #: ``discrete`` or ``integrated`` (Jetson, shared memory).
    type: str | None = None
    compute_capability: str | None = None
    #: The GPU's whole memory (MiB).
    memory_mb: float | None = None
    driver: str | None = None
    cuda_driver: str | None = None
    cuda_runtime: str | None = None
    cudnn: str | None = None
    tensorrt: str | None = None
    #: The process's GPU memory, the peak of the window's samples (MiB), and who counted it.
    gpu_memory_mb: float | None = None
    gpu_memory_source: str | None = None
    #: Over the timed window: ``{"min", "mean", "max"}`` of the SM clock (MHz) and the load (%).
    sm_clock_mhz: dict[str, float] | None = None
    sm_clock_max_mhz: float | None = None
    load_pct: dict[str, float] | None = None
    samples: int | None = None
    #: Jetson: nvpmodel's mode (``MAXN``, ``15W``) and its id, clocks locked (jetson_clocks).
    power_mode: str | None = None
    power_mode_id: int | None = None
    clocks_locked: bool | None = None
    clocks_source: str | None = None
    l4t: str | None = None
    jetpack: str | None = None
    #: Fact -> why it is missing.
    unavailable: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """One line: the GPU, the versions a result depends on, what the window saw."""
        parts = [self.gpu or "NVIDIA GPU"]
        if self.compute_capability:
            parts[0] += f" (sm {self.compute_capability})"
        versions = (
            ("driver", self.driver),
            ("CUDA", self.cuda_runtime or self.cuda_driver),
            ("cuDNN", self.cudnn),
            ("TensorRT", self.tensorrt),
            ("JetPack", self.jetpack),
        )
        parts += [f"{name} {value}" for name, value in versions if value]
        if self.power_mode:
            words: dict[bool | None, str] = {True: ", clocks locked", False: ", clocks free"}
            locked = words.get(self.clocks_locked, "")
            parts.append(f"power mode {self.power_mode}{locked}")
        if self.gpu_memory_mb is not None:
            parts.append(f"process GPU memory {self.gpu_memory_mb:.0f} MB")
        if self.load_pct and self.load_pct.get("mean") is not None:
            parts.append(f"GPU load {self.load_pct['mean']:.0f}%")
        if self.sm_clock_mhz and self.sm_clock_mhz.get("mean") is not None:
            parts.append(f"clock {self.sm_clock_mhz['mean']:.0f} MHz")
        return ", ".join(parts)
