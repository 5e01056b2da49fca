"""The result's ``nvidia`` key: which NVIDIA GPU, driver and libraries a cell ran with, the GPU
memory the process held, the GPU's clock and load over the timed window, and on a Jetson its
power mode and whether the clocks were locked.

The runner's device watch ``WATCH`` (device_watch.py names this module in DEVICE_WATCHES, so
the generic cell names no vendor) gives every cell the key. A cell on a CUDA backend gets a
``NvidiaWatch`` (``for_cell``) whose thread samples the window; NVML is opened at the window's
start, after the memory figures of the load, and the thread is bounded in samples and stopped
at the window's end. ``cell_report`` gives the key once the cell's memory peak is read: the
watch's, or for another cell on a device with NVIDIA facts (NVML loads, or a Jetson) the facts
without samples; None elsewhere.

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Any, ContextManager, Dict, Iterator, List, Optional

from .device_watch import DeviceWatch
from .jetson import TegraGpu, jetson_facts, nvmap_memory_mb, read_release
from .nvidia_info import NVML_NAMES, NvidiaUnavailable, Nvml, library_versions, open_first

CUDA_BACKENDS = ("cuda", "tensorrt")
SAMPLE_PERIOD_S = 0.05
MAX_SAMPLES = 20000


def nvidia_here(root: str) -> bool:
    """Whether this device has NVIDIA facts to give: NVML loads, or it is a Jetson."""
    if read_release(root)[0] is not None or TegraGpu(root).found:
        return True
    library, _ = open_first(NVML_NAMES)
    return library is not None


def summary(values: List[Optional[float]]) -> Optional[Dict[str, float]]:
    seen = [v for v in values if v is not None]
    if not seen:
        return None
    return {"min": min(seen), "mean": round(sum(seen) / len(seen), 2), "max": max(seen)}


class NvidiaWatch:
    """The NVIDIA facts of one cell: a window hook that samples, then ``report()``."""

    def __init__(self, root: str, pid: int) -> None:
        self.root = root
        self.pid = pid
        self.unavailable: Dict[str, str] = {}
        self.samples: Dict[str, List[Optional[float]]] = {"sm_clock_mhz": [], "load_pct": []}
        self.memory: List[Optional[float]] = []
        self.memory_source: Optional[str] = None
        self.nvml: Optional[Nvml] = None
        self.handle: Any = None
        self.device: Optional[Dict[str, Any]] = None
        self.tegra = TegraGpu(root)

    @classmethod
    def for_cell(cls, backend: str, root: str) -> Optional[NvidiaWatch]:
        """A watch that samples the window of a cell on a CUDA backend; None for another."""
        return cls(root, os.getpid()) if backend in CUDA_BACKENDS else None

    def open_nvml(self) -> None:
        try:
            self.nvml = Nvml()
        except NvidiaUnavailable as exc:
            self.unavailable["nvml"] = str(exc)
            return
        devices = [self.nvml.handle(i) for i in range(self.nvml.count())]
        index = 0
        for number, handle in enumerate(devices):
            used, _ = self.nvml.process_memory(handle, self.pid) if handle else (None, "")
            if used:
                index = number  # the GPU this process holds memory on
                break
        if devices and devices[index] is not None:
            self.handle = devices[index]
            self.device = self.nvml.device(index)

    def _sample_once(self) -> None:
        if self.nvml is not None and self.handle is not None:
            sample = self.nvml.sample(self.handle)
            used, self.memory_source = self.nvml.process_memory(self.handle, self.pid)
        elif self.tegra.found:
            sample = self.tegra.sample()
            used, why = nvmap_memory_mb(self.root, self.pid)
            self.memory_source = "nvmap iovmm clients" if used is not None else why
        else:
            return
        for key in self.samples:
            self.samples[key].append(sample.get(key))
        self.memory.append(used)

    @contextmanager
    def window(self) -> Iterator[None]:
        """Samples every ``SAMPLE_PERIOD_S`` from the window's start to its end."""
        self.open_nvml()
        stop = threading.Event()
        thread = threading.Thread(target=self._loop, args=(stop,), daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=5.0)

    def _loop(self, stop: threading.Event) -> None:
        for _ in range(MAX_SAMPLES):
            try:
                self._sample_once()
            except Exception as exc:  # a sampling error costs samples, never the cell
                self.unavailable["sampling"] = "%s: %s" % (type(exc).__name__, exc)
                return
            if stop.wait(SAMPLE_PERIOD_S):
                self._sample_once()  # the window's end
                return

    def report(self) -> Dict[str, Any]:
        """The result's ``nvidia`` object; every missing fact None with its reason."""
        report: Dict[str, Any] = {"source": None}
        device = self.device or {}
        if self.nvml is not None:
            report["source"] = "nvml"
            report["driver"] = self.nvml.driver_version()
            report["cuda_driver"] = self.nvml.cuda_driver_version()
        report.update(_pick(library_versions(), self.unavailable, "cuda_driver", report))
        jetson = jetson_facts(self.root, self.pid)
        if jetson is not None:
            report["source"] = report["source"] or "jetson"
            gpu = jetson.pop("gpu") or {}
            device = device or gpu
            self.unavailable.update(jetson.pop("unavailable"))
            for key in (
                "l4t",
                "jetpack",
                "power_mode",
                "power_mode_id",
                "clocks_locked",
                "clocks_source",
            ):
                report[key] = jetson.get(key)
        elif report["source"] is None:
            self.unavailable.setdefault("gpu", "no NVML and no Jetson GPU in sysfs")
        for key in ("name", "uuid", "type", "compute_capability", "memory_mb", "sm_clock_max_mhz"):
            report["gpu" if key == "name" else key] = device.get(key)
        if self.memory:
            report["gpu_memory_mb"] = max((m for m in self.memory if m is not None), default=None)
        report["gpu_memory_source"] = self.memory_source
        if report.get("gpu_memory_mb") is None:
            self.unavailable.setdefault("gpu_memory_mb", self.memory_source or "not sampled")
        for key, values in self.samples.items():
            report[key] = summary(values)
        report["samples"] = len(self.samples["load_pct"])
        report["unavailable"] = dict(self.unavailable)
        if self.nvml is not None:
            self.nvml.close()
            self.nvml = None
        return report


def _pick(
    versions: Dict[str, Any], unavailable: Dict[str, str], skip: str, report: Dict[str, Any]
) -> Dict[str, Any]:
    """The library versions, the CUDA driver's only where NVML did not give it."""
    picked = {}
    for key, value in versions.items():
        if key == "unavailable" or (key == skip and report.get(skip)):
            continue
        picked[key] = value
        if value is None:
            unavailable[key] = versions["unavailable"].get(key, "unknown")
    return picked


def cell_report(watch: Optional[NvidiaWatch], root: str) -> Optional[Dict[str, Any]]:
    """The result's ``nvidia`` key (call it after the cell's memory figures are read)."""
    if watch is None and nvidia_here(root):
        watch = NvidiaWatch(root, os.getpid())
        watch.open_nvml()
    return watch.report() if watch is not None else None


class NvidiaDeviceWatch(DeviceWatch):
    """The result's ``nvidia`` key for every cell: sampled over the window of a CUDA cell;
    for another, whether the device has NVIDIA facts is asked only at the report, after the
    cell's memory figures (opening NVML maps the driver's library)."""

    key = "nvidia"

    def __init__(self, root: str, sampling: Optional[NvidiaWatch]) -> None:
        self.root = root
        self.sampling = sampling

    @classmethod
    def for_cell(cls, compute_backend: str, root: str) -> NvidiaDeviceWatch:
        return cls(root, NvidiaWatch.for_cell(compute_backend, root))

    def window_hooks(self) -> List[ContextManager[Any]]:
        return [self.sampling.window()] if self.sampling is not None else []

    def report(self) -> Optional[Dict[str, Any]]:
        return cell_report(self.sampling, self.root)


WATCH = NvidiaDeviceWatch
