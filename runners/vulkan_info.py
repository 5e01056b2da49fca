"""Vulkan devices and their memory budget, read through ctypes from the Vulkan loader.

Standard library only (Python 3.8+): the runner calls it on phones and boards. The structs
below are the parts of the Vulkan headers (``vulkan_core.h``) that are read; where a struct is
only written by the driver (``VkPhysicalDeviceProperties`` with its large ``limits``), a buffer
of at least its size stands in and the leading fields are read at their header offsets.

``vulkan_devices()`` lists the physical devices; ``memory_budget(index)`` gives one device's
heaps with VK_EXT_memory_budget's budget and usage. Both raise ``VulkanUnavailable`` with one
line when the loader or an instance is missing.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any, Dict, Iterator, List, Optional

from .opencl_info import loader_errors
from .vulkan_env import driver_env_problem

#: The loader to open instead of the usual names (a loader outside the library path).
LOADER_ENV = "EDGEBENCH_VULKAN_LOADER"
LOADER_NAMES = ("libvulkan.so.1", "libvulkan.so")  # Linux, then Android

STRUCTURE_TYPE_APPLICATION_INFO = 0
STRUCTURE_TYPE_INSTANCE_CREATE_INFO = 1
STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2 = 1000059001
STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2 = 1000059006
STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES = 1000196000
STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT = 1000237000
ERROR_INCOMPATIBLE_DRIVER = -9
MEMORY_HEAP_DEVICE_LOCAL = 0x1
MEMORY_BUDGET_EXTENSION = "VK_EXT_memory_budget"
DRIVER_PROPERTIES_EXTENSION = "VK_KHR_driver_properties"
NVIDIA_VENDOR_ID = 0x10DE

DEVICE_TYPES = {0: "other", 1: "integrated-gpu", 2: "discrete-gpu", 3: "virtual-gpu", 4: "cpu"}

# VkPhysicalDeviceProperties: apiVersion, driverVersion, vendorID, deviceID, deviceType at
# 0..16, deviceName[256] at 20; 824 bytes in all (vulkan_core.h, x86_64 and aarch64).
PROPERTIES_SIZE = 824
NAME_OFFSET = 20
NAME_SIZE = 256
#: VkPhysicalDeviceProperties2 is sType, pNext, then the properties at offset 16.
PROPERTIES2_OFFSET = 16


class VulkanUnavailable(Exception):
    """No loader, or no instance: why, in one line, and its ``kind`` (``no_loader``,
    ``no_device``: a loader without a driver, ``misconfigured``: VK_DRIVER_FILES or
    VK_ICD_FILENAMES point the loader at no driver, ``failed``)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def make_version(major: int, minor: int, patch: int = 0) -> int:
    return (major << 22) | (minor << 12) | patch


def version_text(version: int) -> str:
    """VK_API_VERSION major.minor.patch (the variant bits left out)."""
    return "%d.%d.%d" % ((version >> 22) & 0x7F, (version >> 12) & 0x3FF, version & 0xFFF)


def driver_version_text(version: int, vendor_id: int) -> str:
    """driverVersion as vulkaninfo decodes it: NVIDIA packs 10.8.8.6 bits, the rest follow
    the API version's layout."""
    if vendor_id == NVIDIA_VENDOR_ID:
        parts = (version >> 22, (version >> 14) & 0xFF, (version >> 6) & 0xFF, version & 0x3F)
        return ".".join(str(p) for p in parts)
    return "%d.%d.%d" % (version >> 22, (version >> 12) & 0x3FF, version & 0xFFF)


class ApplicationInfo(ctypes.Structure):
    _fields_ = [
        ("sType", ctypes.c_int),
        ("pNext", ctypes.c_void_p),
        ("pApplicationName", ctypes.c_char_p),
        ("applicationVersion", ctypes.c_uint32),
        ("pEngineName", ctypes.c_char_p),
        ("engineVersion", ctypes.c_uint32),
        ("apiVersion", ctypes.c_uint32),
    ]


class InstanceCreateInfo(ctypes.Structure):
    _fields_ = [
        ("sType", ctypes.c_int),
        ("pNext", ctypes.c_void_p),
        ("flags", ctypes.c_uint32),
        ("pApplicationInfo", ctypes.POINTER(ApplicationInfo)),
        ("enabledLayerCount", ctypes.c_uint32),
        ("ppEnabledLayerNames", ctypes.c_void_p),
        ("enabledExtensionCount", ctypes.c_uint32),
        ("ppEnabledExtensionNames", ctypes.c_void_p),
    ]


class DriverProperties(ctypes.Structure):
    _fields_ = [
        ("sType", ctypes.c_int),
        ("pNext", ctypes.c_void_p),
        ("driverID", ctypes.c_int),
        ("driverName", ctypes.c_char * 256),
        ("driverInfo", ctypes.c_char * 256),
        ("conformanceVersion", ctypes.c_uint8 * 4),
    ]


class MemoryType(ctypes.Structure):
    _fields_ = [("propertyFlags", ctypes.c_uint32), ("heapIndex", ctypes.c_uint32)]


class MemoryHeap(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint64), ("flags", ctypes.c_uint32)]


class MemoryProperties2(ctypes.Structure):
    _fields_ = [
        ("sType", ctypes.c_int),
        ("pNext", ctypes.c_void_p),
        ("memoryTypeCount", ctypes.c_uint32),
        ("memoryTypes", MemoryType * 32),
        ("memoryHeapCount", ctypes.c_uint32),
        ("memoryHeaps", MemoryHeap * 16),
    ]


class MemoryBudgetProperties(ctypes.Structure):
    _fields_ = [
        ("sType", ctypes.c_int),
        ("pNext", ctypes.c_void_p),
        ("heapBudget", ctypes.c_uint64 * 16),
        ("heapUsage", ctypes.c_uint64 * 16),
    ]


class ExtensionProperties(ctypes.Structure):
    _fields_ = [("extensionName", ctypes.c_char * 256), ("specVersion", ctypes.c_uint32)]


def open_loader() -> ctypes.CDLL:
    names = [os.environ[LOADER_ENV]] if os.environ.get(LOADER_ENV) else list(LOADER_NAMES)
    errors = []
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError as exc:
            errors.append(str(exc))
    raise VulkanUnavailable("no_loader", "no Vulkan loader (%s)" % loader_errors(names, errors))


class Instance:
    """A Vulkan instance (API 1.1 asked, 1.0 where the loader is older; no layers), destroyed
    on leaving the ``with`` block; its functions come from vkGetInstanceProcAddr."""

    def __init__(self) -> None:
        self.loader = open_loader()
        self.handle = ctypes.c_void_p()
        self._get_proc = self.loader.vkGetInstanceProcAddr
        self._get_proc.restype = ctypes.c_void_p
        self._get_proc.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

    def __enter__(self) -> Instance:
        create = self.loader.vkCreateInstance
        create.restype = ctypes.c_int
        create.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        for api in (make_version(1, 1), make_version(1, 0)):
            app = ApplicationInfo(
                STRUCTURE_TYPE_APPLICATION_INFO, None, b"edgebench", 1, b"edgebench", 1, api
            )
            info = InstanceCreateInfo(
                STRUCTURE_TYPE_INSTANCE_CREATE_INFO, None, 0, ctypes.pointer(app), 0, None, 0, None
            )
            result = create(ctypes.byref(info), None, ctypes.byref(self.handle))
            if result == 0:
                return self
            if result != ERROR_INCOMPATIBLE_DRIVER or api == make_version(1, 0):
                break
        # A manifest that is no JSON makes some loaders fail with another error than "no
        # driver": the variable that named it is the cause either way.
        _refuse_steered_loader()
        if result == ERROR_INCOMPATIBLE_DRIVER:
            raise VulkanUnavailable("no_device", "the Vulkan loader found no driver (no ICD)")
        raise VulkanUnavailable("failed", "vkCreateInstance failed (VkResult %d)" % result)

    def __exit__(self, *exc: object) -> None:
        destroy = self.function("vkDestroyInstance", None, ctypes.c_void_p, ctypes.c_void_p)
        if destroy is not None:
            destroy(self.handle, None)

    def function(self, name: str, restype: Any, *argtypes: Any) -> Optional[Any]:
        address = self._get_proc(self.handle, name.encode())
        if not address:
            return None
        return ctypes.CFUNCTYPE(restype, *argtypes)(address)

    def physical_devices(self) -> List[ctypes.c_void_p]:
        enumerate_ = self.function(
            "vkEnumeratePhysicalDevices", ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
            ctypes.c_void_p,
        )  # fmt: skip
        count = ctypes.c_uint32(0)
        if enumerate_ is None or enumerate_(self.handle, ctypes.byref(count), None) != 0:
            return []
        handles = (ctypes.c_void_p * count.value)()
        enumerate_(self.handle, ctypes.byref(count), handles)
        return [ctypes.c_void_p(h) for h in handles[: count.value]]

    def extensions(self, device: ctypes.c_void_p) -> List[str]:
        enumerate_ = self.function(
            "vkEnumerateDeviceExtensionProperties", ctypes.c_int, ctypes.c_void_p,
            ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
        )  # fmt: skip
        count = ctypes.c_uint32(0)
        if enumerate_ is None or enumerate_(device, None, ctypes.byref(count), None) != 0:
            return []
        found = (ExtensionProperties * count.value)()
        enumerate_(device, None, ctypes.byref(count), found)
        return [e.extensionName.decode(errors="replace") for e in found[: count.value]]


def _properties(instance: Instance, device: ctypes.c_void_p) -> Dict[str, Any]:
    get = instance.function("vkGetPhysicalDeviceProperties", None, ctypes.c_void_p, ctypes.c_void_p)
    buffer = ctypes.create_string_buffer(PROPERTIES_SIZE + 256)  # room to spare
    if get is not None:
        get(device, buffer)
    api, driver, vendor, device_id, kind = (ctypes.c_uint32 * 5).from_buffer(buffer)
    name = buffer.raw[NAME_OFFSET : NAME_OFFSET + NAME_SIZE].split(b"\0", 1)[0]
    return {
        "name": name.decode(errors="replace"),
        "type": DEVICE_TYPES.get(kind, "other"),
        "api_version": version_text(api),
        "driver_version": driver_version_text(driver, vendor),
        "vendor_id": "0x%04x" % vendor,
        "device_id": "0x%04x" % device_id,
        "_api": api,
    }


def _driver_properties(instance: Instance, device: ctypes.c_void_p) -> Optional[DriverProperties]:
    get = instance.function(
        "vkGetPhysicalDeviceProperties2", None, ctypes.c_void_p, ctypes.c_void_p
    ) or instance.function(
        "vkGetPhysicalDeviceProperties2KHR", None, ctypes.c_void_p, ctypes.c_void_p
    )
    if get is None:
        return None
    driver = DriverProperties(STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES, None)
    buffer = ctypes.create_string_buffer(PROPERTIES2_OFFSET + PROPERTIES_SIZE + 256)
    ctypes.c_int.from_buffer(buffer).value = STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
    ctypes.c_void_p.from_buffer(buffer, 8).value = ctypes.addressof(driver)
    get(device, buffer)
    return driver


def _each_device(instance: Instance) -> Iterator[Dict[str, Any]]:
    for index, device in enumerate(instance.physical_devices()):
        entry = _properties(instance, device)
        entry["index"] = index
        extensions = instance.extensions(device)
        api = entry.pop("_api")
        if api >= make_version(1, 2) or DRIVER_PROPERTIES_EXTENSION in extensions:
            driver = _driver_properties(instance, device)
            if driver is not None:
                entry["driver_name"] = driver.driverName.decode(errors="replace")
                entry["driver_info"] = driver.driverInfo.decode(errors="replace")
        entry["memory_budget"] = MEMORY_BUDGET_EXTENSION in extensions
        entry["_handle"] = device
        yield entry


def vulkan_devices() -> List[Dict[str, Any]]:
    """Every physical device: name, type, api_version, driver_version, vendor_id, device_id,
    index, memory_budget (whether VK_EXT_memory_budget is there) and, where the device has
    API 1.2 or VK_KHR_driver_properties, driver_name and driver_info."""
    with Instance() as instance:
        devices = list(_each_device(instance))
    if not devices:
        _refuse_steered_loader()
    for entry in devices:
        del entry["_handle"]
    return devices


def _refuse_steered_loader() -> None:
    """The loader found no driver: where VK_DRIVER_FILES or VK_ICD_FILENAMES point it at
    nothing usable, that is why (``misconfigured``), not a missing driver."""
    problem = driver_env_problem()
    if problem is not None:
        raise VulkanUnavailable("misconfigured", problem)


def memory_budget(device_index: int = 0) -> Optional[List[Dict[str, Any]]]:
    """The memory heaps of Vulkan device ``device_index``, each ``{"size", "device_local",
    "budget", "usage"}``: size in bytes, device_local a bool, and where the device has
    VK_EXT_memory_budget the heap's budget and what this process uses of it, in bytes (the
    driver's count); both None without the extension. None when there is no such device.
    Raises ``VulkanUnavailable`` without a loader or an instance."""
    with Instance() as instance:
        devices = instance.physical_devices()
        if not 0 <= device_index < len(devices):
            return None
        device = devices[device_index]
        has_budget = MEMORY_BUDGET_EXTENSION in instance.extensions(device)
        budget = MemoryBudgetProperties(STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT)
        memory = MemoryProperties2(
            STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
            ctypes.addressof(budget) if has_budget else None,
        )
        get = instance.function(
            "vkGetPhysicalDeviceMemoryProperties2", None, ctypes.c_void_p, ctypes.c_void_p
        ) or instance.function(
            "vkGetPhysicalDeviceMemoryProperties2KHR", None, ctypes.c_void_p, ctypes.c_void_p
        )
        if get is not None:
            get(device, ctypes.byref(memory))
        else:  # a 1.0 instance: the plain query fills the same struct after sType and pNext
            get = instance.function(
                "vkGetPhysicalDeviceMemoryProperties", None, ctypes.c_void_p, ctypes.c_void_p
            )
            if get is None:
                return None
            get(device, ctypes.addressof(memory) + MemoryProperties2.memoryTypeCount.offset)
            has_budget = False
        return [
            {
                "size": heap.size,
                "device_local": bool(heap.flags & MEMORY_HEAP_DEVICE_LOCAL),
                "budget": budget.heapBudget[i] if has_budget else None,
                "usage": budget.heapUsage[i] if has_budget else None,
            }
            for i, heap in enumerate(memory.memoryHeaps[: min(memory.memoryHeapCount, 16)])
        ]
