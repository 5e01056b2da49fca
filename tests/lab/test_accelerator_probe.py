"""The runner's accelerator probe (runners/accelerators.py) on this machine's real loaders and
drivers, checked against what vulkaninfo and clinfo print; and without a loader, with a driver
that crashes and with one that hangs (tiny loaders compiled here)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from fakes.gpu_tools import (
    OPENCL_SKIP,
    VULKAN_SKIP,
    clinfo_devices,
    driver_manifest,
    tool_output,
    vulkaninfo_devices,
)

from edgebench.lab.device import LocalDevice
from edgebench.runners import accelerators, opencl_info, vulkan_info


def probe(apis: list[str], timeout: float = accelerators.PROBE_TIMEOUT_S) -> dict:
    return accelerators.finish_probe(accelerators.start_probe(apis), timeout)


def test_vulkan_devices_are_what_vulkaninfo_lists():
    expected = vulkaninfo_devices()
    if not expected:
        pytest.skip(VULKAN_SKIP)
    found = probe(["Vulkan"])["devices"]
    assert [d["name"] for d in found] == [e["deviceName"] for e in expected]
    for device, listed in zip(found, expected, strict=True):
        assert device["api_version"] == listed["apiVersion"]
        assert device["driver_version"] == listed["driverVersion"]
        assert (
            "PHYSICAL_DEVICE_TYPE_" + device["type"].upper().replace("-", "_")
            == (listed["deviceType"])
        )
        if "driverInfo" in listed:
            assert device["driver"] == listed["driverInfo"]
            assert device["driver_name"] == listed["driverName"]
        assert int(device["vendor_id"], 16) == int(listed["vendorID"], 16)
        if "llvmpipe" in listed["deviceName"]:
            assert device["software"] == "lavapipe"


def test_vulkan_memory_heaps_are_what_vulkaninfo_lists():
    if not vulkaninfo_devices():
        pytest.skip(VULKAN_SKIP)
    full = tool_output("vulkaninfo")
    sizes = [
        int(s) for s in re.findall(r"^\s*size\s*=\s*(\d+)", full.split("memoryTypes:")[0], re.M)
    ]
    has_budget = "VK_EXT_memory_budget" in full.split("Device Extensions:", 1)[-1]
    heaps = vulkan_info.memory_budget(0)
    assert heaps is not None and [h["size"] for h in heaps] == sizes[: len(heaps)]
    for heap in heaps:
        if has_budget:
            assert 0 < heap["budget"] <= heap["size"] and heap["usage"] >= 0
        else:
            assert heap["budget"] is None and heap["usage"] is None
    assert vulkan_info.memory_budget(99) is None


def test_opencl_devices_are_what_clinfo_lists():
    expected = clinfo_devices()
    if not expected:
        pytest.skip(OPENCL_SKIP)
    found = probe(["OpenCL"])["devices"]
    assert [d["name"] for d in found] == [e["Device Name"] for e in expected]
    for device, listed in zip(found, expected, strict=True):
        assert device["platform"] == listed["Platform Name"]
        assert device["type"] == listed["Device Type"].lower()
        assert device["version"] == listed["Device Version"]
        assert device["driver"] == listed["Driver Version"]
        assert listed["Device Version"].startswith(f"OpenCL {device['api_version']}")
        if listed["Platform Name"] == "Portable Computing Language":
            assert device["software"] == "pocl"


def test_without_a_loader_the_facts_say_none_and_name_the_packages(monkeypatch):
    monkeypatch.setenv(vulkan_info.LOADER_ENV, "libvulkan-absent.so.1")
    monkeypatch.setenv(opencl_info.LOADER_ENV, "libOpenCL-absent.so.1")
    facts = LocalDevice().facts()
    assert not [a for a in facts.accelerators if a.api in ("Vulkan", "OpenCL")]
    vulkan, opencl = facts.accelerator_problems["Vulkan"], facts.accelerator_problems["OpenCL"]
    assert "no Vulkan loader (libvulkan-absent.so.1: not found)" in vulkan
    assert "mesa-vulkan-drivers libvulkan1" in vulkan
    assert "no OpenCL loader" in opencl and "pocl-opencl-icd" in opencl
    assert facts.frameworks, "the rest of the probe still answered"


def test_a_loader_without_a_driver_finds_no_device(monkeypatch, tmp_path):
    if not vulkaninfo_devices():
        pytest.skip(VULKAN_SKIP)
    manifest = driver_manifest(tmp_path / "no-driver.json")  # a driver found nowhere
    monkeypatch.setenv("VK_ICD_FILENAMES", str(manifest))
    monkeypatch.setenv("VK_DRIVER_FILES", str(manifest))
    answer = probe(["Vulkan"])
    assert answer["devices"] == []
    assert answer["problems"]["Vulkan"]["kind"] == "no_device"


def fake_loader(tmp_path: Path, body: str) -> Path:
    """A libvulkan.so stand-in whose vkCreateInstance runs ``body``: a driver gone wrong."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("needs a C compiler: apt-get install gcc")
    source = tmp_path / "loader.c"
    source.write_text(
        "#include <signal.h>\n#include <unistd.h>\n"
        "void *vkGetInstanceProcAddr(void *i, const char *n) { return 0; }\n"
        f"int vkCreateInstance(void *a, void *b, void *c) {{ {body} return 0; }}\n"
    )
    library = tmp_path / "libvulkan-broken.so"
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-o", str(library), str(source)], check=True, timeout=120
    )
    return library


def test_a_crashing_driver_costs_only_its_api(monkeypatch, tmp_path):
    monkeypatch.setenv(vulkan_info.LOADER_ENV, str(fake_loader(tmp_path, "raise(SIGSEGV);")))
    answer = probe(["Vulkan", "OpenCL"])
    problem = answer["problems"]["Vulkan"]
    assert problem["kind"] == "failed"
    assert problem["message"].startswith("probe failed: the driver crashed (SIGSEGV)")
    assert "OpenCL" in {d["api"] for d in answer["devices"]} | set(answer["problems"])
    facts = LocalDevice().facts()  # through the runner's probe: the frameworks still answer
    assert facts.frameworks and "SIGSEGV" in facts.accelerator_problems["Vulkan"]


def test_a_hanging_driver_is_given_up_on_and_the_next_api_still_asked(monkeypatch, tmp_path):
    monkeypatch.setenv(vulkan_info.LOADER_ENV, str(fake_loader(tmp_path, "pause();")))
    answer = probe(["Vulkan", "OpenCL"], timeout=3)
    assert answer["problems"]["Vulkan"]["message"] == "probe failed: no answer within 3 s"
    assert "OpenCL" in {d["api"] for d in answer["devices"]} | set(answer["problems"])
