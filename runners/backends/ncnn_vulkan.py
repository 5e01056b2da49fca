"""ncnn on Vulkan: the device check before the load, the check after it that ncnn kept Vulkan
on, and the report of what ran (the device as ncnn sees it, the precision, the layers on it).

Runs on the device: Python 3.8+, the ncnn module only.
"""

from __future__ import annotations

from typing import Any, Dict, List

from ..protocol.errors import BackendError
from ..vulkan_env import driver_env_problem
from .accelerator import accelerator_report, fallback

API = "Vulkan"
NO_DEVICE = (
    "no Vulkan device on this machine: install mesa-vulkan-drivers libvulkan1 (software) or "
    "the GPU's driver"
)
#: ncnn's GpuInfo.type(), as the report's device_type.
DEVICE_TYPES = {0: "discrete", 1: "integrated", 2: "virtual", 3: "cpu"}
STAGES_NOTE = (
    "Extractor.extract uploads the inputs, runs the layers and downloads the outputs in one "
    "call, so compute includes both copies; copy_in and copy_out are host-side only"
)
BOUNDARIES = {
    "copy_in": "Net.create_extractor and Extractor.input of host Mats (no upload yet)",
    "compute": "Extractor.extract: the upload, the layers on the device and the download",
    "copy_out": "Mat to numpy copy of each output (on the host)",
}
DEVICE_MEMORY_UNAVAILABLE = "ncnn says only a heap budget, not what the model holds on the device"


def require_device(ncnn: Any, precision: str) -> None:
    """Refuse before the load what cannot run on Vulkan here."""
    if precision == "int8":
        raise BackendError(
            "unsupported",
            "ncnn has no int8 Vulkan path: an int8 layer turns Vulkan off for the model "
            "(run int8 on cpu)",
        )
    if ncnn.get_gpu_count() == 0:
        # Drivers that are installed but hidden by VK_DRIVER_FILES need no install advice.
        raise BackendError("unsupported", driver_env_problem() or NO_DEVICE)


def check_kept(net: Any, said: List[str]) -> None:
    """After load_param: ncnn turns use_vulkan_compute off without failing when no device is
    usable (or the options rule Vulkan out); the cell must not time the CPU then."""
    if net.opt.use_vulkan_compute:
        return
    words = "; ".join(said[-2:]) if said else "no usable Vulkan device"
    raise fallback("ncnn", "vulkan", "use_vulkan_compute was off after load_param (%s)" % words)


def report(net: Any) -> Dict[str, Any]:
    """What ran on Vulkan: the net's device, the precision its sanitised options kept, and
    how many of its layers (Input left out) are Vulkan layers. The runner adds what the
    Vulkan driver says of the device (accelerator_run.py): versions, software, memory."""
    info = net.vulkan_device().info()
    opt = net.opt
    half = opt.use_fp16_storage or opt.use_fp16_packed or opt.use_fp16_arithmetic
    layers = [layer for layer in net.layers() if layer.type != "Input"]
    return accelerator_report(
        API,
        device=info.device_name(),
        device_type=DEVICE_TYPES.get(info.type(), "other"),
        precision="fp16" if half else "fp32",
        delegated_ops=sum(1 for layer in layers if layer.support_vulkan),
        total_ops=len(layers),
        device_memory_unavailable=DEVICE_MEMORY_UNAVAILABLE,
        stages_note=STAGES_NOTE,
    )
