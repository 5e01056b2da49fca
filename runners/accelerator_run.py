"""A backend's accelerator report completed with what the device says of itself: whether it is
a software device, its Vulkan driver's own name for itself, and the device memory the cell
holds where the driver counts it (VK_EXT_memory_budget's heap usage, before the load and after
the first inference).

Runs on the device: Python 3.8+, standard library only (the Vulkan loader through ctypes).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from . import vulkan_info
from .protocol.devices import software_kind

MIB = 1024 * 1024


class DeviceMemory:
    """The Vulkan devices and the device-local memory this process uses on each, read before
    the model loads (only for a Vulkan cell: elsewhere nothing is asked)."""

    def __init__(self, backend: str) -> None:
        self.devices: List[Dict[str, Any]] = []
        self.before: Dict[int, Optional[int]] = {}
        if backend != "vulkan":
            return
        try:
            self.devices = vulkan_info.vulkan_devices()
        except vulkan_info.VulkanUnavailable:
            return
        for device in self.devices:
            if device.get("memory_budget"):
                self.before[device["index"]] = device_local_usage(device["index"])

    def complete(self, report: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
        """``report`` with the device's software kind, driver, API version and memory filled
        in (the Vulkan device of the same name as the report's)."""
        if report is None:
            return None
        name = report.get("device") or ""
        kind = software_kind(
            report["api"].split()[0], name, report.get("device_type") or "", report["driver"] or ""
        )
        report["software"] = bool(report["software"] or kind)
        device = next((d for d in self.devices if d.get("name") == name), None)
        if device is None:
            return report
        report["driver"] = device.get("driver_info") or device.get("driver_version")
        report["api_version"] = report["api_version"] or device.get("api_version")
        if not device.get("memory_budget"):
            report["device_memory_unavailable"] = (
                "%s has no VK_EXT_memory_budget: its driver does not count the process's "
                "device memory" % name
            )
            return report
        before = self.before.get(device["index"])
        after = device_local_usage(device["index"])
        if before is not None and after is not None:
            report["device_memory_mb"] = round((after - before) / MIB, 3)
            report["device_memory_unavailable"] = None
        return report


def device_local_usage(index: int) -> Optional[int]:
    """Bytes this process uses of device ``index``'s device-local heaps, as its driver counts."""
    try:
        heaps = vulkan_info.memory_budget(index) or []
    except vulkan_info.VulkanUnavailable:
        return None
    used = [h["usage"] for h in heaps if h["device_local"] and h["usage"] is not None]
    return sum(used) if used else None
