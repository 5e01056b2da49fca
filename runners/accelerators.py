"""What accelerators a device offers: Vulkan and OpenCL devices, OpenVINO's devices, NVIDIA's
CUDA GPUs (NVML, or a Jetson's sysfs), and which of them are software (a GPU API served by the
CPU).

Standard library only, Python 3.8+, no host imports: it runs on phones and boards. The
runner's ``--probe`` calls ``start_probe()`` and ``finish_probe()``, which run this module as
a child process: a driver that crashes or hangs while it is asked costs only the accelerator
facts ("probe failed: ..."), never the probe. Run by hand, ``python3 -m
edgebench_runner.accelerators`` (on the host, ``python -m edgebench.runners.accelerators``)
prints one JSON line per API.

Each API's line is ``{"api", "devices": [...], "problem": None | {"kind", "message"}}``; a
device is ``{"api", "name", "type", "software", "driver", "api_version", "index", ...}`` with
the API's own extras (Vulkan: driver_name, driver_version, vendor_id, memory_budget; OpenCL:
platform, platform_vendor, platform_version, platform_index, vendor, version, memory_mb;
CUDA: compute_capability, memory_mb, uuid, and ``api_version`` the CUDA driver's version).
Problem kinds: ``no_loader`` (the API's library is missing), ``no_device`` (it is there and
finds none), ``misconfigured`` (Vulkan: VK_DRIVER_FILES or VK_ICD_FILENAMES name no driver,
so the installed ones are ignored; the line names the variable), ``failed`` (an error, a
crash or no answer in time).

For a GPU cell's device memory, ``vulkan_info.memory_budget(device_index)`` gives the heaps
with VK_EXT_memory_budget's budget and usage (see there).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from subprocess import Popen
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import nvidia_info, opencl_info, vulkan_info
from .jetson import TegraGpu, read_release
from .nvidia_info import NvidiaUnavailable
from .protocol.devices import software_kind

APIS = ("Vulkan", "OpenCL", "OpenVINO", "CUDA")
#: Bound on the child probe: lavapipe and pocl answer in well under a second.
PROBE_TIMEOUT_S = 20.0
OPENVINO_TYPES = {"CPU": "cpu", "GPU": "gpu", "NPU": "npu"}


def _vulkan() -> List[Dict[str, Any]]:
    devices = []
    for found in vulkan_info.vulkan_devices():
        driver = found.get("driver_info") or found.get("driver_name") or found["driver_version"]
        about = " ".join((found.get("driver_name") or "", driver))
        entry = {"api": "Vulkan", "driver": driver, **found}
        entry["software"] = software_kind("Vulkan", found["name"], found["type"], about)
        devices.append(entry)
    return devices


def _opencl() -> List[Dict[str, Any]]:
    devices = []
    for found in opencl_info.opencl_devices():
        about = " ".join((found["platform"], found["version"]))
        entry = {"api": "OpenCL", "driver": found["driver_version"], **found}
        entry["software"] = software_kind("OpenCL", found["name"], found["type"], about)
        devices.append(entry)
    return devices


def _openvino() -> List[Dict[str, Any]]:
    openvino = importlib.import_module("openvino")
    core = openvino.Core()
    devices = []
    for index, device in enumerate(core.available_devices):
        name = str(core.get_property(device, "FULL_DEVICE_NAME"))
        kind = OPENVINO_TYPES.get(device.split(".")[0], "other")
        entry = {
            "api": "OpenVINO",
            "name": name,
            "device": device,
            "type": kind,
            "driver": None,
            "api_version": openvino.get_version().split("-")[0],
            "index": index,
        }
        entry["software"] = software_kind("OpenVINO", name, kind)
        devices.append(entry)
    return devices


def _cuda() -> List[Dict[str, Any]]:
    """NVML's GPUs; on a Jetson (no NVML before JetPack 7) its Tegra GPU from sysfs."""
    try:
        found = nvidia_info.nvml_devices()
    except NvidiaUnavailable as exc:
        root = os.environ.get("EDGEBENCH_SYSFS_ROOT") or "/"
        tegra = TegraGpu(root)
        if exc.kind == "no_loader" and tegra.found:
            return [_tegra_device(tegra, root)]
        if exc.kind == "no_loader" and shutil.which("nvidia-smi") is None:
            raise NvidiaUnavailable(
                "no_loader",
                "no NVIDIA GPU: nvidia-smi not found, nor libnvidia-ml.so.1 (the NVIDIA driver)",
            ) from exc
        raise
    devices = []
    for device in found["devices"]:
        entry = {"api": "CUDA", "driver": found["driver"], "api_version": found["cuda_driver"]}
        entry.update(device)
        entry["software"] = None
        devices.append(entry)
    return devices


def _tegra_device(tegra: TegraGpu, root: str) -> Dict[str, Any]:
    facts = tegra.facts()
    release, _ = read_release(root)
    cuda_driver, _ = nvidia_info.cuda_driver_version()
    return {
        "api": "CUDA",
        "name": facts["name"] or "Tegra GPU",
        "type": "integrated",
        "software": None,
        "driver": "L4T %s" % release if release else None,
        "api_version": cuda_driver,
        "compute_capability": facts["compute_capability"],
        "sm_clock_max_mhz": facts["sm_clock_max_mhz"],
        "index": 0,
    }


PROBES: Dict[str, Callable[[], List[Dict[str, Any]]]] = {
    "Vulkan": _vulkan,
    "OpenCL": _opencl,
    "OpenVINO": _openvino,
    "CUDA": _cuda,
}
UNAVAILABLE = (vulkan_info.VulkanUnavailable, opencl_info.OpenCLUnavailable, NvidiaUnavailable)


def probe_api(api: str) -> Dict[str, Any]:
    """One API's devices, or the problem that left it without any; never raises."""
    devices: List[Dict[str, Any]] = []
    problem = None
    try:
        devices = PROBES[api]()
    except UNAVAILABLE as exc:
        problem = {"kind": exc.kind, "message": str(exc)}
    except Exception as exc:  # a driver's error is a fact about the device, not a crash
        problem = {"kind": "failed", "message": "probe failed: %s: %s" % (type(exc).__name__, exc)}
    if not devices and problem is None:
        problem = {"kind": "no_device", "message": "the %s loader found no device" % api}
    return {"api": api, "devices": devices, "problem": problem}


def apis_here() -> List[str]:
    """The APIs worth asking: OpenVINO only where it is installed (importing it costs time)."""
    return [api for api in APIS if api != "OpenVINO" or importlib.util.find_spec("openvino")]


def start_probe(apis: Optional[List[str]] = None) -> Tuple[List[str], Optional[Popen]]:
    """Start this file as a child process that answers for ``apis`` (default: those worth
    asking here), one line each in that order; the child is None when it cannot start."""
    apis = apis_here() if apis is None else apis
    if not sys.executable:
        return apis, None
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", __name__, *apis],
            env=_child_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError:
        return apis, None
    return apis, child


def _child_env() -> Dict[str, str]:
    """This process's environment, with the folder this package was imported from (the runner
    folder on a device) first on PYTHONPATH, so the child imports the same package."""
    env = dict(os.environ)
    top = (__package__ or "").split(".")[0]
    root = next((p for p in sys.path if p and os.path.isdir(os.path.join(p, top))), None)
    if top and root:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    return env


def finish_probe(
    started: Tuple[List[str], Optional[Popen]], timeout: float = PROBE_TIMEOUT_S
) -> Dict[str, Any]:
    """``{"devices": [...], "problems": {api: {"kind", "message"}}}`` from the child that
    ``start_probe`` started. An API the child died or hung on gets "probe failed: ..." and
    a new child asks the APIs after it; all within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    apis, child = started
    facts: Dict[str, Any] = {"devices": [], "problems": {}}
    while apis:  # each round answers or fails at least one API
        answers, why = _answers(child, max(deadline - time.monotonic(), 2.0))
        for api in apis:
            if api in answers:
                facts["devices"] += answers[api].get("devices") or []
                if answers[api].get("problem"):
                    facts["problems"][api] = answers[api]["problem"]
        unanswered = [api for api in apis if api not in answers]
        if not unanswered:
            break
        message = "probe failed: " + (why or "no answer")
        facts["problems"][unanswered[0]] = {"kind": "failed", "message": message}
        apis = unanswered[1:]
        if apis:
            apis, child = start_probe(apis)
    return facts


def _answers(child: Optional[Popen], timeout: float) -> Tuple[Dict[str, Any], Optional[str]]:
    """The child's answers by API, and why it stopped short (None: it exited cleanly)."""
    if child is None:
        return {}, "could not start %s" % (sys.executable or "Python")
    try:
        stdout, stderr = child.communicate(timeout=timeout)
        why = _exit_reason(child.returncode, stderr)
    except subprocess.TimeoutExpired:
        child.kill()
        stdout, _ = child.communicate()
        why = "no answer within %.0f s" % timeout
    answers = {}
    for line in stdout.decode(errors="replace").splitlines():
        try:
            answer = json.loads(line)
        except ValueError:
            continue
        if isinstance(answer, dict) and answer.get("api") in APIS:
            answers[answer["api"]] = answer
    return answers, why


def _exit_reason(returncode: int, stderr: bytes) -> Optional[str]:
    if returncode == 0:
        return None
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "signal %d" % -returncode
        how = "the driver crashed (%s)" % name
    else:
        how = "exited %d" % returncode
    tail = stderr.decode(errors="replace").strip().splitlines()[-1:]
    return how + (": " + tail[0][:200] if tail else "")


def main(argv: List[str]) -> int:
    for api in argv or apis_here():
        if api not in PROBES:
            continue
        sys.stdout.write(json.dumps(probe_api(api)) + "\n")
        sys.stdout.flush()  # what was answered survives a crash in the next API's driver
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
