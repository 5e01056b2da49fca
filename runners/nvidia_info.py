"""NVIDIA facts through ctypes: NVML (driver, CUDA driver, each GPU's name, UUID, compute
capability, memory, clocks, load, power, energy counter, per-process memory) and the versions
of the CUDA runtime, cuDNN and TensorRT.

Standard library only (Python 3.8+), no pynvml: NVML is ``libnvidia-ml.so.1``, which the NVIDIA
driver installs (not on Jetson before JetPack 7: see ``jetson.py``). Every call that fails or
is not supported gives None; opening NVML where it is missing raises ``NvidiaUnavailable`` with
one line.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .cuda_runtime import library_candidates as cudart_candidates

NVML_ENV = "EDGEBENCH_NVML_LIBRARY"
NVML_NAMES = ("libnvidia-ml.so.1", "libnvidia-ml.so")
NO_NVML = "no NVIDIA GPU: libnvidia-ml.so.1 not found (the NVIDIA driver)"
CUDNN_NAMES = ("libcudnn.so.9", "libcudnn.so.8", "libcudnn.so")
#: TensorRT's libraries, newest major first.
NVINFER_NAMES = ("libnvinfer.so.11", "libnvinfer.so.10", "libnvinfer.so.8", "libnvinfer.so")
CUDA_DRIVER_NAMES = ("libcuda.so.1", "libcuda.so")

NVML_SUCCESS = 0
NVML_ERROR_INSUFFICIENT_SIZE = 7
CLOCK_SM = 1
NAME_BUFFER = 96
MAX_PROCESSES = 64
#: NVML_VALUE_NOT_AVAILABLE (nvml.h): an unsigned long long field NVML could not fill, as a
#: process's usedGpuMemory under Windows WDDM or without the rights to read it.
NVML_VALUE_NOT_AVAILABLE = 2**64 - 1
MIB = 1024 * 1024
#: GPUs NVML lists that share the host's memory (Jetson Thor, DGX Spark): integrated.
INTEGRATED_NAMES = ("orin", "thor", "tegra", "gb10")


class NvidiaUnavailable(Exception):
    """NVML cannot be used here: ``kind`` (``no_loader``, ``no_device``, ``failed``) and why."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Memory(ctypes.Structure):
    _fields_ = [
        ("total", ctypes.c_ulonglong),
        ("free", ctypes.c_ulonglong),
        ("used", ctypes.c_ulonglong),
    ]


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class _ProcessV1(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong)]


class _ProcessV2(ctypes.Structure):
    """The layout of both ``nvmlProcessInfo_v2_t`` and the v3 call's ``nvmlProcessInfo_t``."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
    ]


#: The per-process call, newest first, with the struct it fills.
PROCESS_CALLS = (
    ("nvmlDeviceGetComputeRunningProcesses_v3", _ProcessV2),
    ("nvmlDeviceGetComputeRunningProcesses_v2", _ProcessV2),
    ("nvmlDeviceGetComputeRunningProcesses", _ProcessV1),
)


def open_first(names: Sequence[str]) -> Tuple[Optional[ctypes.CDLL], List[str]]:
    """The first of ``names`` that loads, and what dlopen said of the others."""
    errors: List[str] = []
    for name in names:
        try:
            return ctypes.CDLL(name), errors
        except OSError as exc:
            errors.append(str(exc))
    return None, errors


class Nvml:
    """NVML, initialised; ``close()`` shuts it down. Every query returns None when NVML says
    the device does not support it (or fails)."""

    def __init__(self) -> None:
        names = [os.environ[NVML_ENV]] if os.environ.get(NVML_ENV) else list(NVML_NAMES)
        library, errors = open_first(names)
        if library is None:
            missing = all("No such file" in e or "cannot open" in e for e in errors)
            raise NvidiaUnavailable("no_loader", NO_NVML if missing else "; ".join(errors))
        self.lib = library
        init = getattr(library, "nvmlInit_v2", None) or library.nvmlInit
        code = init()
        if code != NVML_SUCCESS:
            raise NvidiaUnavailable("failed", "nvmlInit failed: %s" % self.error(code))

    def error(self, code: int) -> str:
        describe = self.lib.nvmlErrorString
        describe.restype = ctypes.c_char_p
        return "%s (%d)" % ((describe(code) or b"?").decode(errors="replace"), code)

    def close(self) -> None:
        self.lib.nvmlShutdown()

    def _call(self, name: str, *args: Any) -> bool:
        function = getattr(self.lib, name, None)
        return function is not None and function(*args) == NVML_SUCCESS

    def _text(self, name: str, *args: Any) -> Optional[str]:
        buffer = ctypes.create_string_buffer(NAME_BUFFER)
        if not self._call(name, *args, buffer, ctypes.c_uint(NAME_BUFFER)):
            return None
        return buffer.value.decode(errors="replace")

    def _uint(self, name: str, *args: Any) -> Optional[int]:
        value = ctypes.c_uint()
        return value.value if self._call(name, *args, ctypes.byref(value)) else None

    def driver_version(self) -> Optional[str]:
        return self._text("nvmlSystemGetDriverVersion")

    def cuda_driver_version(self) -> Optional[str]:
        value = ctypes.c_int()
        for name in ("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"):
            if self._call(name, ctypes.byref(value)):
                return "%d.%d" % (value.value // 1000, value.value % 1000 // 10)
        return None

    def count(self) -> int:
        count = self._uint("nvmlDeviceGetCount_v2")
        return count if count is not None else self._uint("nvmlDeviceGetCount") or 0

    def handle(self, index: int) -> Optional[ctypes.c_void_p]:
        handle = ctypes.c_void_p()
        for name in ("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"):
            if self._call(name, ctypes.c_uint(index), ctypes.byref(handle)):
                return handle
        return None

    def device(self, index: int) -> Optional[Dict[str, Any]]:
        """One GPU's facts: name, UUID, compute capability, memory, clocks, load, power."""
        handle = self.handle(index)
        if handle is None:
            return None
        name = self._text("nvmlDeviceGetName", handle) or "NVIDIA GPU %d" % index
        major, minor = ctypes.c_int(), ctypes.c_int()
        capability = None
        if self._call(
            "nvmlDeviceGetCudaComputeCapability", handle, ctypes.byref(major), ctypes.byref(minor)
        ):
            capability = "%d.%d" % (major.value, minor.value)
        memory = _Memory()
        has_memory = self._call("nvmlDeviceGetMemoryInfo", handle, ctypes.byref(memory))
        integrated = any(word in name.lower() for word in INTEGRATED_NAMES)
        facts = {
            "index": index,
            "name": name,
            "uuid": self._text("nvmlDeviceGetUUID", handle),
            "type": "integrated" if integrated else "discrete",
            "compute_capability": capability,
            "memory_mb": round(memory.total / MIB) if has_memory else None,
            "memory_used_mb": round(memory.used / MIB, 1) if has_memory else None,
            "sm_clock_max_mhz": self._uint("nvmlDeviceGetMaxClockInfo", handle, CLOCK_SM),
        }
        facts.update(self.sample(handle))
        return facts

    def sample(self, handle: ctypes.c_void_p) -> Dict[str, Any]:
        """What changes while a cell runs: SM clock, load, board power and energy counter."""
        use = _Utilization()
        power_mw = self._uint("nvmlDeviceGetPowerUsage", handle)
        energy = ctypes.c_ulonglong()
        has_energy = self._call("nvmlDeviceGetTotalEnergyConsumption", handle, ctypes.byref(energy))
        has_use = self._call("nvmlDeviceGetUtilizationRates", handle, ctypes.byref(use))
        return {
            "sm_clock_mhz": self._uint("nvmlDeviceGetClockInfo", handle, CLOCK_SM),
            "load_pct": float(use.gpu) if has_use else None,
            "power_w": power_mw / 1000.0 if power_mw is not None else None,
            "energy_mj": int(energy.value) if has_energy else None,
        }

    def process_memory(self, handle: ctypes.c_void_p, pid: int) -> Tuple[Optional[float], str]:
        """The GPU memory process ``pid`` holds on a device (MiB) and which call said so."""
        for name, struct in PROCESS_CALLS:
            function = getattr(self.lib, name, None)
            if function is None:
                continue
            count = ctypes.c_uint(MAX_PROCESSES)
            infos = (struct * MAX_PROCESSES)()
            code = function(handle, ctypes.byref(count), infos)
            if code != NVML_SUCCESS:
                return None, "%s: %s" % (name, self.error(code))
            return process_memory_mb(infos[: count.value], pid, name)
        return None, "this NVML has no nvmlDeviceGetComputeRunningProcesses"


def process_memory_mb(infos: Sequence[Any], pid: int, call: str) -> Tuple[Optional[float], str]:
    """What ``call``'s list of processes on one GPU says of ``pid``: its memory in MiB and the
    call, or None and why. NVML fills NVML_VALUE_NOT_AVAILABLE where it cannot tell, and
    lists the host's PIDs: a runner in a container (its own PID namespace) is not found."""
    for info in infos:
        if info.pid != pid:
            continue
        if info.usedGpuMemory == NVML_VALUE_NOT_AVAILABLE:
            why = "process %d's GPU memory is not available (NVML_VALUE_NOT_AVAILABLE)" % pid
            return None, "%s: %s" % (call, why)
        return round(info.usedGpuMemory / MIB, 1), call
    return None, (
        "%s lists no process %d on this GPU (of %d): not available, as NVML lists the host's "
        "PIDs and a runner in a container has another" % (call, pid, len(infos))
    )


def nvml_devices() -> Dict[str, Any]:
    """``{"driver", "cuda_driver", "devices": [...]}`` from NVML; NvidiaUnavailable when there
    is no NVML or no GPU."""
    nvml = Nvml()
    try:
        devices = [d for d in (nvml.device(i) for i in range(nvml.count())) if d]
        if not devices:
            raise NvidiaUnavailable("no_device", "NVML found no NVIDIA GPU")
        return {
            "driver": nvml.driver_version(),
            "cuda_driver": nvml.cuda_driver_version(),
            "devices": devices,
        }
    finally:
        nvml.close()


def _encoded(value: int, major_unit: int) -> str:
    return "%d.%d.%d" % (value // major_unit, value % major_unit // 100, value % 100)


#: The version functions that return their answer, with the C type their header declares
#: (the others write it to an int and return a status).
VERSION_RESTYPES = {
    "cudnnGetVersion": ctypes.c_size_t,
    "getInferLibVersion": ctypes.c_int32,
}


def version_function(library: ctypes.CDLL, symbol: str) -> Any:
    """``library``'s ``symbol``, its return type set from VERSION_RESTYPES; None if absent."""
    function = getattr(library, symbol, None)
    if function is not None and symbol in VERSION_RESTYPES:
        function.restype = VERSION_RESTYPES[symbol]
    return function


def _version_call(names: Sequence[str], symbol: str) -> Tuple[Any, str]:
    """A library's version function's answer, or None and why."""
    library, _ = open_first(names)
    if library is None:
        more = " and %d more places" % (len(names) - 3) if len(names) > 3 else ""
        return None, "%s%s: not found" % (", ".join(names[:3]), more)
    function = version_function(library, symbol)
    if function is None:
        return None, "%s has no %s" % (names[0], symbol)
    if symbol in VERSION_RESTYPES:
        return int(function()), ""
    value = ctypes.c_int()
    code = function(ctypes.byref(value))
    return (value.value, "") if code == 0 else (None, "%s returned %d" % (symbol, code))


def cuda_runtime_version() -> Tuple[Optional[str], str]:
    """libcudart's ``cudaRuntimeGetVersion`` (12040 -> ``12.4``); it answers with no driver."""
    # Where the TensorRT backend finds libcudart (the pip wheels' folders first).
    value, why = _version_call(cudart_candidates(), "cudaRuntimeGetVersion")
    return ("%d.%d" % (value // 1000, value % 1000 // 10), "") if value else (None, why)


def cuda_driver_version() -> Tuple[Optional[str], str]:
    """libcuda's ``cuDriverGetVersion``: the CUDA version the driver supports (Jetson too)."""
    value, why = _version_call(CUDA_DRIVER_NAMES, "cuDriverGetVersion")
    return ("%d.%d" % (value // 1000, value % 1000 // 10), "") if value else (None, why)


def cudnn_version() -> Tuple[Optional[str], str]:
    """``cudnnGetVersion``: major*10000 + minor*100 + patch from cuDNN 9, *1000 before."""
    value, why = _version_call(CUDNN_NAMES, "cudnnGetVersion")
    if not value:
        return None, why
    return _encoded(value, 10000 if value >= 90000 else 1000), ""


def tensorrt_version(names: Sequence[str] = NVINFER_NAMES) -> Tuple[Optional[str], str]:
    """TensorRT's version: the imported module's (importing it here would cost the cell its
    memory figures), else libnvinfer's ``getInferLibVersion`` (major*10000 + minor*100 +
    patch from TensorRT 10, *1000 before)."""
    module = sys.modules.get("tensorrt")
    if module is not None and getattr(module, "__version__", None):
        return str(module.__version__), ""
    value, why = _version_call(names, "getInferLibVersion")
    if not value:
        return None, why
    return _encoded(value, 10000 if value >= 100000 else 1000), ""


def library_versions() -> Dict[str, Any]:
    """CUDA runtime and driver, cuDNN and TensorRT versions; each missing one is None with
    its reason under ``unavailable``."""
    versions: Dict[str, Any] = {}
    unavailable: Dict[str, str] = {}
    for key, read in (
        ("cuda_runtime", cuda_runtime_version),
        ("cuda_driver", cuda_driver_version),
        ("cudnn", cudnn_version),
        ("tensorrt", tensorrt_version),
    ):
        try:
            versions[key], why = read()
        except (OSError, ValueError, AttributeError) as exc:
            versions[key], why = None, "%s: %s" % (type(exc).__name__, exc)
        if versions[key] is None:
            unavailable[key] = why
    versions["unavailable"] = unavailable
    return versions
