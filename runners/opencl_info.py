"""OpenCL platforms and devices, read through ctypes from the OpenCL ICD loader.

Standard library only (Python 3.8+). ``opencl_devices()`` lists every device of every
platform with its platform's name, vendor and version; it raises ``OpenCLUnavailable`` with
one line when the loader is missing.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any, Dict, List

#: The loader to open instead of the usual names (a vendor's libOpenCL.so outside the path).
LOADER_ENV = "EDGEBENCH_OPENCL_LOADER"
LOADER_NAMES = ("libOpenCL.so.1", "libOpenCL.so")  # Linux, then Android

PLATFORM_VERSION = 0x0901
PLATFORM_NAME = 0x0902
PLATFORM_VENDOR = 0x0903
DEVICE_TYPE = 0x1000
DEVICE_GLOBAL_MEM_SIZE = 0x101F
DEVICE_NAME = 0x102B
DEVICE_VENDOR = 0x102C
DRIVER_VERSION = 0x102D
DEVICE_VERSION = 0x102F
DEVICE_TYPE_ALL = 0xFFFFFFFF
DEVICE_NOT_FOUND = -1
PLATFORM_NOT_FOUND_KHR = -1001
#: CL_DEVICE_TYPE bits, most specific first (a device may also carry DEFAULT).
DEVICE_TYPES = ((4, "gpu"), (8, "accelerator"), (2, "cpu"), (16, "custom"), (1, "default"))


class OpenCLUnavailable(Exception):
    """No loader, or the loader failed: why, in one line, and its ``kind`` (``no_loader``,
    ``failed``)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def open_loader() -> ctypes.CDLL:
    names = [os.environ[LOADER_ENV]] if os.environ.get(LOADER_ENV) else list(LOADER_NAMES)
    errors = []
    for name in names:
        try:
            library = ctypes.CDLL(name)
        except OSError as exc:
            errors.append(str(exc))
            continue
        _declare(library)
        return library
    raise OpenCLUnavailable("no_loader", "no OpenCL loader (%s)" % loader_errors(names, errors))


def loader_errors(names: List[str], errors: List[str]) -> str:
    """What dlopen said, shortened to the names where it only found none of them."""
    if all("No such file" in e or "cannot open" in e for e in errors):
        return "%s: not found" % ", ".join(names)
    return "; ".join(errors)


def _declare(library: ctypes.CDLL) -> None:
    size_p = ctypes.POINTER(ctypes.c_size_t)
    uint_p = ctypes.POINTER(ctypes.c_uint32)
    library.clGetPlatformIDs.argtypes = [ctypes.c_uint32, ctypes.c_void_p, uint_p]
    for name in ("clGetPlatformInfo", "clGetDeviceInfo"):
        getattr(library, name).argtypes = [
            ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t, ctypes.c_void_p, size_p,
        ]  # fmt: skip
    library.clGetDeviceIDs.argtypes = [
        ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_void_p, uint_p,
    ]  # fmt: skip
    for name in ("clGetPlatformIDs", "clGetPlatformInfo", "clGetDeviceIDs", "clGetDeviceInfo"):
        getattr(library, name).restype = ctypes.c_int32


def _info(query: Any, handle: ctypes.c_void_p, param: int) -> bytes:
    size = ctypes.c_size_t(0)
    if query(handle, param, 0, None, ctypes.byref(size)) != 0 or size.value == 0:
        return b""
    buffer = ctypes.create_string_buffer(size.value)
    if query(handle, param, size.value, buffer, None) != 0:
        return b""
    return buffer.raw


def _text(query: Any, handle: ctypes.c_void_p, param: int) -> str:
    return _info(query, handle, param).split(b"\0", 1)[0].decode(errors="replace").strip()


def _number(query: Any, handle: ctypes.c_void_p, param: int) -> int:
    raw = _info(query, handle, param)
    return int.from_bytes(raw[:8], "little") if raw else 0


def _handles(count: int) -> Any:
    return (ctypes.c_void_p * max(count, 1))()


def type_name(bits: int) -> str:
    return next((name for bit, name in DEVICE_TYPES if bits & bit), "other")


def api_version(version: str) -> str:
    """ "3.0" from "OpenCL 3.0 PoCL ..." (the form every CL_*_VERSION string takes)."""
    words = version.split()
    return words[1] if len(words) > 1 and words[0] == "OpenCL" else version


def opencl_devices() -> List[Dict[str, Any]]:
    """Every device of every platform: name, type (gpu, accelerator, cpu, custom, default),
    vendor, api_version ("3.0"), version (the device's whole string), driver_version,
    memory_mb (global memory), index (within its platform), and the platform's index, name,
    vendor and version."""
    library = open_loader()
    count = ctypes.c_uint32(0)
    result = library.clGetPlatformIDs(0, None, ctypes.byref(count))
    if result == PLATFORM_NOT_FOUND_KHR or count.value == 0:
        return []
    if result != 0:
        raise OpenCLUnavailable("failed", "clGetPlatformIDs failed (error %d)" % result)
    platforms = _handles(count.value)
    library.clGetPlatformIDs(count.value, platforms, None)
    devices: List[Dict[str, Any]] = []
    for platform_index, platform in enumerate(platforms[: count.value]):
        platform = ctypes.c_void_p(platform)
        about = {
            "platform_index": platform_index,
            "platform": _text(library.clGetPlatformInfo, platform, PLATFORM_NAME),
            "platform_vendor": _text(library.clGetPlatformInfo, platform, PLATFORM_VENDOR),
            "platform_version": _text(library.clGetPlatformInfo, platform, PLATFORM_VERSION),
        }
        found = ctypes.c_uint32(0)
        if library.clGetDeviceIDs(platform, DEVICE_TYPE_ALL, 0, None, ctypes.byref(found)) != 0:
            continue  # DEVICE_NOT_FOUND: a platform without devices
        handles = _handles(found.value)
        library.clGetDeviceIDs(platform, DEVICE_TYPE_ALL, found.value, handles, None)
        for index, device in enumerate(handles[: found.value]):
            device = ctypes.c_void_p(device)
            query = library.clGetDeviceInfo
            version = _text(query, device, DEVICE_VERSION)
            devices.append(
                {
                    "name": _text(query, device, DEVICE_NAME),
                    "type": type_name(_number(query, device, DEVICE_TYPE)),
                    "vendor": _text(query, device, DEVICE_VENDOR),
                    "api_version": api_version(version),
                    "version": version,
                    "driver_version": _text(query, device, DRIVER_VERSION),
                    "memory_mb": _number(query, device, DEVICE_GLOBAL_MEM_SIZE) // (1 << 20),
                    "index": index,
                    **about,
                }
            )
    return devices
