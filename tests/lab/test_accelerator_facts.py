"""Accelerator facts on the host (lab/accelerator_facts.py): the probe's answer read into
entries, a phone's GLES line, the lines `edgebench devices` prints, and stored records (old
ones without these facts too)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from fakes.gpu_tools import VULKAN_SKIP, vulkaninfo_devices
from fakes.records import sampled_record

from edgebench.lab.accelerator_facts import (
    Accelerator,
    accelerator_devices,
    collect_accelerators,
    describe_accelerators,
    merge_accelerators,
    parse_gles_line,
)
from edgebench.lab.facts import DeviceFacts
from edgebench.lab.runner_choice import Probe
from edgebench.results.records import Record

LAVAPIPE = {
    "api": "Vulkan",
    "name": "llvmpipe (LLVM 15.0.6, 256 bits)",
    "type": "cpu",
    "software": "lavapipe",
    "driver": "Mesa 22.3.6 (LLVM 15.0.6)",
    "api_version": "1.3.230",
    "index": 0,
    "driver_name": "llvmpipe",
    "vendor_id": "0x10005",
}
POCL = {
    "api": "OpenCL",
    "name": "pthread-haswell",
    "type": "cpu",
    "software": "pocl",
    "driver": "3.1+debian",
    "api_version": "3.0",
    "platform": "Portable Computing Language",
    "index": 0,
}
NO_LOADER = {"kind": "no_loader", "message": "no OpenCL loader (libOpenCL.so.1: not found)"}
NO_NVIDIA = {"kind": "no_loader", "message": "no NVIDIA GPU: nvidia-smi not found"}
NO_CUDA_LINE = "cuda: none (no NVIDIA GPU: nvidia-smi not found)"


def probed(devices: list[dict], problems: dict | None = None) -> DeviceFacts:
    """The facts of a probe that, as on this machine, found no NVIDIA GPU."""
    answer = {
        "accelerators": {"devices": devices, "problems": {**(problems or {}), "CUDA": NO_NVIDIA}}
    }
    return DeviceFacts(**collect_accelerators(Probe(answer)))


def test_devices_prints_one_short_line_per_device_and_per_missing_api():
    facts = probed([LAVAPIPE], {"OpenCL": NO_LOADER})
    assert describe_accelerators(facts) == [
        "vulkan: llvmpipe (LLVM 15.0.6, 256 bits), cpu, Mesa 22.3.6 (LLVM 15.0.6), "
        "Vulkan 1.3.230 — software (lavapipe)",
        "opencl: none (no OpenCL loader (libOpenCL.so.1: not found): install "
        "ocl-icd-libopencl1 pocl-opencl-icd (software: pocl), or the GPU vendor's ICD)",
        NO_CUDA_LINE,
    ]
    assert describe_accelerators(probed([POCL])) == [
        "opencl: Portable Computing Language / pthread-haswell, cpu, OpenCL 3.0 — software (pocl)",
        NO_CUDA_LINE,
    ]


def test_a_failed_probe_is_said_as_such_and_no_probe_as_not_probed():
    failed = {"kind": "failed", "message": "probe failed: the driver crashed (SIGSEGV)"}
    assert describe_accelerators(probed([], {"Vulkan": failed})) == [
        "vulkan: none (probe failed: the driver crashed (SIGSEGV))",
        NO_CUDA_LINE,
    ]
    unprobed = DeviceFacts(**collect_accelerators(Probe(error="no runner")))
    assert describe_accelerators(unprobed) == [
        "accelerators: not probed (no runner answered a probe here)"
    ]


@pytest.mark.parametrize(
    ("line", "vendor", "renderer", "version", "driver"),
    [
        (
            "GLES: Qualcomm, Adreno (TM) 618, OpenGL ES 3.2 V@415.0 (GIT@663be55, I724753c5e3, "
            "1573037262) (Date:11/06/19)",
            "Qualcomm",
            "Adreno (TM) 618",
            "3.2",
            "V@415.0 (GIT@663be55, I724753c5e3, 1573037262) (Date:11/06/19)",
        ),
        ("GLES: ARM, Mali-G52, OpenGL ES 3.2", "ARM", "Mali-G52", "3.2", None),
        (
            "GLES: Google (Intel), SwiftShader Device (Subzero), OpenGL ES 3.0 SwiftShader 4.1",
            "Google (Intel)",
            "SwiftShader Device (Subzero)",
            "3.0",
            "SwiftShader 4.1",
        ),
    ],
)
def test_the_gles_line_gives_vendor_renderer_version_and_driver(
    line, vendor, renderer, version, driver
):
    gpu = parse_gles_line(line)
    assert gpu is not None
    assert (gpu.details["vendor"], gpu.name, gpu.api_version, gpu.driver) == (
        vendor,
        renderer,
        version,
        driver,
    )
    assert gpu.software == ("SwiftShader" if "SwiftShader" in renderer else None)
    assert parse_gles_line("------------RE GLES (Ganesh)------------") is None


def test_a_runners_enumerated_devices_win_over_a_phones_libraries():
    runner = {"accelerators": [Accelerator.from_dict(LAVAPIPE)], "accelerator_problems": {}}
    library = Accelerator("Vulkan", "Adreno (TM) 740", "gpu", library="/system/lib64/libvulkan.so")
    gles = Accelerator("OpenGL ES", "Adreno (TM) 740", "gpu")
    phone = {"accelerators": [library, gles], "accelerator_problems": {"OpenCL": "no libOpenCL"}}
    merged = merge_accelerators(runner, phone)
    assert [a.api for a in merged["accelerators"]] == ["Vulkan", "OpenGL ES"]
    assert merged["accelerators"][0].library is None
    assert merged["accelerator_problems"] == {"OpenCL": "no libOpenCL"}


def test_records_keep_the_facts_and_older_records_have_none():
    facts = probed([LAVAPIPE, POCL])
    record = replace(sampled_record("local", "ncnn", 5.0, seed=1), device_info=facts.as_dict())
    stored = json.loads(json.dumps(record.to_dict()))
    info = Record.from_dict(stored).device_info
    (vulkan,) = accelerator_devices(info, "vulkan")
    assert vulkan == Accelerator.from_dict(LAVAPIPE)
    assert vulkan.details["vendor_id"] == "0x10005"
    assert [a.platform for a in accelerator_devices(info, "OpenCL")] == [POCL["platform"]]
    assert accelerator_devices(facts, "Vulkan") == [vulkan]
    assert accelerator_devices({"cpu_model": "old record"}, "Vulkan") == []


def test_edgebench_devices_lists_this_machines_vulkan_device(run_cli):
    listed = vulkaninfo_devices()
    if not listed:
        pytest.skip(VULKAN_SKIP)
    result = run_cli(["devices", "--devices", "local"])
    assert result.returncode == 0, result.stderr
    vulkan = [line.strip() for line in result.stdout.splitlines() if "vulkan: " in line]
    assert [line.split(", ")[0] for line in vulkan[:1]] == [
        f"vulkan: {listed[0]['deviceName'].split(',')[0]}"
    ], result.stdout
