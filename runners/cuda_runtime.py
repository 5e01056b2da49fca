"""The few CUDA runtime calls the TensorRT backend needs, through ctypes over libcudart.

Device count and facts, versions, memory (device, pinned host), async copies, streams, events
and CUDA Graphs (capture, instantiate, launch). Every failure is one line naming the call and
CUDA's error name and string; with no usable GPU, ``open_cuda`` raises ``CudaUnavailable``.
A libcudart newer than the driver (cudaErrorInsufficientDriver) gives way to the next one found:
a CUDA 12 driver with both CUDA 13 and CUDA 12 runtimes installed runs on the CUDA 12 one.

Runs on the device: Python 3.8+, standard library only (no cuda-python, no torch).
"""

from __future__ import annotations

import ctypes
import glob
import os
import sys
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

#: A file path to libcudart, tried before anything else.
ENV_LIBRARY = "EDGEBENCH_CUDART"
#: Sonames, newest first (CUDA 11's soname is libcudart.so.11.0).
SONAMES = ("libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so")
#: Folders of pip wheels under a sys.path entry that carry libcudart.
WHEEL_FOLDERS = ("nvidia/cuda_runtime/lib", "nvidia/cu*/lib")
SYSTEM_FOLDERS = ("/usr/local/cuda/lib64", "/usr/local/cuda/targets/*/lib")

# enum values from CUDA's driver_types.h
MEMCPY_HOST_TO_DEVICE = 1
MEMCPY_DEVICE_TO_HOST = 2
STREAM_NON_BLOCKING = 1
HOST_ALLOC_DEFAULT = 0
#: cudaErrorInsufficientDriver: this libcudart is newer than the driver (an older one may do).
INSUFFICIENT_DRIVER = 35
CAPTURE_MODE_THREAD_LOCAL = 1
ATTR_INTEGRATED = 18
ATTR_CC_MAJOR = 75
ATTR_CC_MINOR = 76
#: cudaDeviceProp is about 1 KiB and grows between releases; its name comes first.
DEVICE_PROP_BYTES = 8192
DEVICE_NAME_BYTES = 256
#: totalGlobalMem's offset: name[256], uuid (16), luid[8], luidDeviceNodeMask (4) + padding.
TOTAL_MEMORY_OFFSET = 288


class CudaUnavailable(Exception):
    """No usable NVIDIA GPU: libcudart is missing, or it finds no device or driver."""


class CudaError(Exception):
    """A CUDA runtime call failed: ``cudaMalloc: cudaErrorMemoryAllocation (out of memory)``;
    ``code`` is the cudaError_t."""

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class DeviceInfo:
    index: int
    name: str
    major: int
    minor: int
    integrated: bool
    total_memory: int

    @property
    def compute_capability(self) -> str:
        return "%d.%d" % (self.major, self.minor)


_VOID_P = ctypes.c_void_p
_SIZE_T = ctypes.c_size_t
_INT_P = ctypes.POINTER(ctypes.c_int)
_VOID_PP = ctypes.POINTER(ctypes.c_void_p)
#: argtypes of every call used (all return cudaError_t, an int).
_SIGNATURES = {
    "cudaGetDeviceCount": [_INT_P],
    "cudaSetDevice": [ctypes.c_int],
    "cudaDeviceGetAttribute": [_INT_P, ctypes.c_int, ctypes.c_int],
    "cudaRuntimeGetVersion": [_INT_P],
    "cudaDriverGetVersion": [_INT_P],
    "cudaMemGetInfo": [ctypes.POINTER(_SIZE_T), ctypes.POINTER(_SIZE_T)],
    "cudaMalloc": [_VOID_PP, _SIZE_T],
    "cudaFree": [_VOID_P],
    "cudaHostAlloc": [_VOID_PP, _SIZE_T, ctypes.c_uint],
    "cudaFreeHost": [_VOID_P],
    "cudaMemcpyAsync": [_VOID_P, _VOID_P, _SIZE_T, ctypes.c_int, _VOID_P],
    "cudaStreamCreateWithFlags": [_VOID_PP, ctypes.c_uint],
    "cudaStreamSynchronize": [_VOID_P],
    "cudaStreamDestroy": [_VOID_P],
    "cudaEventCreate": [_VOID_PP],
    "cudaEventRecord": [_VOID_P, _VOID_P],
    "cudaEventSynchronize": [_VOID_P],
    "cudaEventElapsedTime": [ctypes.POINTER(ctypes.c_float), _VOID_P, _VOID_P],
    "cudaEventDestroy": [_VOID_P],
    "cudaStreamBeginCapture": [_VOID_P, ctypes.c_int],
    "cudaStreamEndCapture": [_VOID_P, _VOID_PP],
    "cudaGraphLaunch": [_VOID_P, _VOID_P],
    "cudaGraphExecDestroy": [_VOID_P],
    "cudaGraphDestroy": [_VOID_P],
}


def library_candidates() -> List[str]:
    """Where libcudart may be, in the order tried: $EDGEBENCH_CUDART, pip wheels' folders on
    sys.path, the sonames (the dynamic linker's search), the CUDA toolkit's folders."""
    found: List[str] = []
    override = os.environ.get(ENV_LIBRARY)
    if override:
        found.append(override)
    for entry in sys.path:
        for folder in WHEEL_FOLDERS:
            found.extend(sorted(glob.glob(os.path.join(entry or ".", folder, "libcudart.so*"))))
    found.extend(SONAMES)
    for folder in SYSTEM_FOLDERS:
        for path in sorted(glob.glob(folder)):
            found.extend(os.path.join(path, name) for name in SONAMES)
    return list(dict.fromkeys(found))


def loadable_libraries(candidates: Optional[List[str]] = None) -> Iterator[Tuple[ctypes.CDLL, str]]:
    """Each libcudart among ``candidates`` (default: ``library_candidates()``) that loads, in
    order, with what it was loaded as; a file the dynamic linker already gave under another
    name (a soname and its toolkit path) comes once."""
    seen = set()
    for candidate in library_candidates() if candidates is None else candidates:
        try:
            library = ctypes.CDLL(candidate)
        except OSError:
            continue
        entry = getattr(library, "cudaGetDeviceCount", None)
        if entry is None:
            continue
        address = ctypes.cast(entry, ctypes.c_void_p).value
        if address not in seen:
            seen.add(address)
            yield library, candidate


def not_found(candidates: Optional[List[str]]) -> CudaUnavailable:
    places = len(library_candidates() if candidates is None else candidates)
    return CudaUnavailable(
        "no NVIDIA GPU: libcudart not found (tried %d places, e.g. %s; install the CUDA "
        "runtime or set %s to its path)" % (places, ", ".join(SONAMES[:2]), ENV_LIBRARY)
    )


def load_library(candidates: Optional[List[str]] = None) -> Tuple[ctypes.CDLL, str]:
    """The first libcudart that loads, and what it was loaded as."""
    for found in loadable_libraries(candidates):
        return found
    raise not_found(candidates)


class CudaRuntime:
    """libcudart's calls as Python methods: handles and pointers are ints."""

    def __init__(self, library: ctypes.CDLL, path: str) -> None:
        self.library = library
        self.path = path
        for name, argtypes in _SIGNATURES.items():
            function = getattr(library, name)
            function.argtypes = argtypes
            function.restype = ctypes.c_int
        for name in ("cudaGetErrorName", "cudaGetErrorString"):
            getattr(library, name).restype = ctypes.c_char_p
            getattr(library, name).argtypes = [ctypes.c_int]

    def describe(self, call: str, code: int) -> str:
        name = self.library.cudaGetErrorName(code) or b"cudaError %d" % code
        words = self.library.cudaGetErrorString(code) or b"no description"
        return "%s: %s (%s)" % (call, name.decode(), words.decode())

    def call(self, name: str, *args: object) -> None:
        code = getattr(self.library, name)(*args)
        if code:
            raise CudaError(self.describe(name, code), code)

    def _out_int(self, name: str, *args: object) -> int:
        value = ctypes.c_int()
        self.call(name, ctypes.byref(value), *args)
        return value.value

    def _out_handle(self, name: str, *args: object) -> int:
        handle = ctypes.c_void_p()
        self.call(name, ctypes.byref(handle), *args)
        return handle.value or 0

    # devices and versions
    def device_count(self) -> int:
        return self._out_int("cudaGetDeviceCount")

    def set_device(self, index: int) -> None:
        self.call("cudaSetDevice", index)

    def device_info(self, index: int) -> DeviceInfo:
        props = ctypes.create_string_buffer(DEVICE_PROP_BYTES)
        # CUDA 12 renamed the struct's getter (the old symbol keeps the 11 layout); 13 has one.
        getter = getattr(self.library, "cudaGetDeviceProperties_v2", None)
        name = "cudaGetDeviceProperties_v2"
        if getter is None:
            getter, name = self.library.cudaGetDeviceProperties, "cudaGetDeviceProperties"
        getter.argtypes, getter.restype = [ctypes.c_void_p, ctypes.c_int], ctypes.c_int
        code = getter(props, index)
        if code:
            raise CudaError(self.describe(name, code), code)
        raw = props.raw
        total = int.from_bytes(raw[TOTAL_MEMORY_OFFSET : TOTAL_MEMORY_OFFSET + 8], sys.byteorder)
        return DeviceInfo(
            index=index,
            name=raw[:DEVICE_NAME_BYTES].split(b"\0", 1)[0].decode("utf-8", "replace"),
            major=self._out_int("cudaDeviceGetAttribute", ATTR_CC_MAJOR, index),
            minor=self._out_int("cudaDeviceGetAttribute", ATTR_CC_MINOR, index),
            integrated=bool(self._out_int("cudaDeviceGetAttribute", ATTR_INTEGRATED, index)),
            total_memory=total,
        )

    def runtime_version(self) -> int:
        """``12040`` for CUDA 12.4."""
        return self._out_int("cudaRuntimeGetVersion")

    def driver_version(self) -> int:
        """The newest CUDA version the installed driver supports (0: no driver)."""
        return self._out_int("cudaDriverGetVersion")

    # memory
    def memory_info(self) -> Tuple[int, int]:
        """(free, total) bytes of the current device."""
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        self.call("cudaMemGetInfo", ctypes.byref(free), ctypes.byref(total))
        return free.value, total.value

    def malloc(self, size: int) -> int:
        return self._out_handle("cudaMalloc", max(int(size), 1))

    def free(self, pointer: int) -> None:
        self.call("cudaFree", pointer)

    def host_alloc(self, size: int) -> int:
        """Page-locked host memory (fast, truly asynchronous copies)."""
        return self._out_handle("cudaHostAlloc", max(int(size), 1), HOST_ALLOC_DEFAULT)

    def free_host(self, pointer: int) -> None:
        self.call("cudaFreeHost", pointer)

    def copy_to_device(self, device: int, host: int, size: int, stream: int) -> None:
        self.call("cudaMemcpyAsync", device, host, size, MEMCPY_HOST_TO_DEVICE, stream)

    def copy_to_host(self, host: int, device: int, size: int, stream: int) -> None:
        self.call("cudaMemcpyAsync", host, device, size, MEMCPY_DEVICE_TO_HOST, stream)

    # streams and events
    def stream_create(self) -> int:
        return self._out_handle("cudaStreamCreateWithFlags", STREAM_NON_BLOCKING)

    def stream_synchronize(self, stream: int) -> None:
        self.call("cudaStreamSynchronize", stream)

    def stream_destroy(self, stream: int) -> None:
        self.call("cudaStreamDestroy", stream)

    def event_create(self) -> int:
        return self._out_handle("cudaEventCreate")

    def event_record(self, event: int, stream: int) -> None:
        self.call("cudaEventRecord", event, stream)

    def event_synchronize(self, event: int) -> None:
        self.call("cudaEventSynchronize", event)

    def elapsed_ns(self, start: int, end: int) -> int:
        """Time between two recorded, completed events (about 0.5 us resolution)."""
        ms = ctypes.c_float()
        self.call("cudaEventElapsedTime", ctypes.byref(ms), start, end)
        return round(ms.value * 1e6)

    def event_destroy(self, event: int) -> None:
        self.call("cudaEventDestroy", event)

    # CUDA Graphs
    def begin_capture(self, stream: int) -> None:
        self.call("cudaStreamBeginCapture", stream, CAPTURE_MODE_THREAD_LOCAL)

    def end_capture(self, stream: int) -> int:
        return self._out_handle("cudaStreamEndCapture", stream)

    def graph_instantiate(self, graph: int) -> int:
        """An executable graph. cudaGraphInstantiateWithFlags (CUDA 11.4+) has one signature
        everywhere; cudaGraphInstantiate took (exec, graph, errorNode, log, logSize) before
        CUDA 12 and (exec, graph, flags) since."""
        handle = ctypes.c_void_p()
        with_flags = getattr(self.library, "cudaGraphInstantiateWithFlags", None)
        if with_flags is not None:
            with_flags.argtypes = [_VOID_PP, _VOID_P, ctypes.c_ulonglong]
            with_flags.restype = ctypes.c_int
            code, name = with_flags(ctypes.byref(handle), graph, 0), "cudaGraphInstantiateWithFlags"
        else:
            plain = self.library.cudaGraphInstantiate
            plain.restype, name = ctypes.c_int, "cudaGraphInstantiate"
            if self.runtime_version() >= 12000:
                plain.argtypes = [_VOID_PP, _VOID_P, ctypes.c_ulonglong]
                code = plain(ctypes.byref(handle), graph, 0)
            else:
                log = ctypes.create_string_buffer(1024)
                plain.argtypes = [_VOID_PP, _VOID_P, _VOID_PP, ctypes.c_char_p, _SIZE_T]
                code = plain(ctypes.byref(handle), graph, None, log, len(log))
        if code:
            raise CudaError(self.describe(name, code), code)
        return handle.value or 0

    def graph_launch(self, graph_exec: int, stream: int) -> None:
        self.call("cudaGraphLaunch", graph_exec, stream)

    def graph_exec_destroy(self, graph_exec: int) -> None:
        self.call("cudaGraphExecDestroy", graph_exec)

    def graph_destroy(self, graph: int) -> None:
        self.call("cudaGraphDestroy", graph)


def version_text(version: int) -> str:
    """CUDA's packed version as text: 12040 -> ``12.4``."""
    return "%d.%d" % (version // 1000, (version % 1000) // 10)


_OPENED: List[CudaRuntime] = []


def open_cuda(candidates: Optional[List[str]] = None) -> CudaRuntime:
    """The CUDA runtime with at least one device, or ``CudaUnavailable`` naming each libcudart
    tried and what it said. A library too new for the driver gives way to the next one."""
    if _OPENED:
        return _OPENED[0]
    tried: List[str] = []
    for library, path in loadable_libraries(candidates):
        runtime = CudaRuntime(library, path)
        try:
            count = runtime.device_count()
        except CudaError as exc:
            tried.append("%s [%s]" % (exc, path))
            if exc.code == INSUFFICIENT_DRIVER:
                continue
            break
        if count < 1:
            tried.append("cudaGetDeviceCount found none [%s]" % path)
            break
        _OPENED.append(runtime)
        return runtime
    if not tried:
        raise not_found(candidates)
    raise CudaUnavailable("no NVIDIA GPU: " + "; ".join(tried))
