"""A phone's GPU facts over ADB: the real adb server, the ADB device emulator dressed as a
Snapdragon and a Kirin phone (fakes/phone_profiles.py), edgebench's facts and `devices`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.adb_fixtures import AdbServer, EmulatedPhone, connect_phone, disconnect_phone
from fakes.labs import write_phone_lab
from fakes.phone_profiles import KIRIN, SNAPDRAGON, PhoneProfile

from edgebench.lab.accelerator_facts import accelerator_devices
from edgebench.lab.remote import RemoteDevice
from edgebench.lab.runner_choice import TOOLS_NOT_PROBED
from edgebench.lab.runner_kinds import RunnerKind
from edgebench.lab.transports.adb import AdbTarget, AdbTransport

TOOLS = 'runner = "framework-tools"'


def phone_with(profile: PhoneProfile, server: AdbServer, tmp_path: Path) -> EmulatedPhone:
    sandbox = tmp_path / profile.name
    profile.install(sandbox)
    return connect_phone(server, sandbox, props=profile.props)


@pytest.fixture(params=[SNAPDRAGON, KIRIN], ids=lambda p: p.name)
def gpu_phone(request, adb_server, tmp_path) -> Iterator[tuple[PhoneProfile, EmulatedPhone]]:
    phone = phone_with(request.param, adb_server, tmp_path)
    try:
        yield request.param, phone
    finally:
        disconnect_phone(phone)


def tools_phone(phone: EmulatedPhone) -> RemoteDevice:
    """The phone measured by the frameworks' tools: no runner probe, only the shell's facts."""
    transport = AdbTransport(AdbTarget("emu-phone", phone.serial, "127.0.0.1", phone.adb_port))
    device = RemoteDevice("emu-phone", transport, work_dir=str(phone.sandbox / "wd"))
    device.requested_runner = RunnerKind.FRAMEWORK_TOOLS
    return device


def test_a_phone_reports_its_gpu_libraries_and_vulkan_hal(gpu_phone):
    profile, phone = gpu_phone
    facts = tools_phone(phone).facts()
    assert facts.probe_error == TOOLS_NOT_PROBED
    (gles,) = accelerator_devices(facts, "OpenGL ES")
    vendor, renderer, version = (p.strip() for p in profile.gles[len("GLES:") :].split(",", 2))
    assert (gles.details["vendor"], gles.name, gles.type) == (vendor, renderer, "gpu")
    assert f"OpenGL ES {gles.api_version} {gles.driver}" == version
    assert gles.software is None
    (vulkan,) = accelerator_devices(facts, "Vulkan")
    assert vulkan.library == "/system/lib64/libvulkan.so" and vulkan.name == renderer
    assert vulkan.driver == f"vulkan.{profile.props['ro.hardware.vulkan']}.so"
    opencl = accelerator_devices(facts, "OpenCL")
    if "vendor/lib64/libOpenCL.so" in profile.libraries:
        assert [a.library for a in opencl] == ["/vendor/lib64/libOpenCL.so"]
        assert "OpenCL" not in facts.accelerator_problems
    else:
        assert opencl == []
        assert "no libOpenCL.so under /system/vendor/lib64" in facts.accelerator_problems["OpenCL"]
    assert facts.soc == (profile.props["ro.soc.model"] or profile.props["ro.board.platform"])


def test_a_phone_without_gpu_facts_says_so(emulated_phone):
    facts = tools_phone(emulated_phone).facts()
    assert facts.accelerators == []
    assert set(facts.accelerator_problems) == {"OpenCL", "Vulkan", "OpenGL ES", "CUDA"}
    assert "dumpsys SurfaceFlinger" in facts.accelerator_problems["OpenGL ES"]
    assert facts.accelerator_problems["CUDA"].startswith("no NVIDIA GPU: Android phones")


def test_devices_prints_each_phones_gpu(run_cli, adb_server, tmp_path):
    phones = [phone_with(p, adb_server, tmp_path) for p in (SNAPDRAGON, KIRIN)]
    try:
        lines = []
        for profile, phone in zip((SNAPDRAGON, KIRIN), phones, strict=True):
            lab = write_phone_lab(tmp_path / f"{profile.name}.toml", phone, [TOOLS])
            result = run_cli(["devices", "--lab", str(lab), "--devices", "emu-phone"])
            assert result.returncode == 0, result.stderr
            lines.append(result.stdout)
    finally:
        for phone in phones:
            disconnect_phone(phone)
    snapdragon, kirin = lines
    assert "opengl es: Adreno (TM) 740, gpu, V@0676.32 (GIT@" in snapdragon, snapdragon
    assert "opencl: /vendor/lib64/libOpenCL.so, for Adreno (TM) 740" in snapdragon
    assert "opengl es: Mali-G76, gpu, v1.r18p0-01rel0." in kirin, kirin
    assert "opencl: none (no libOpenCL.so under /system/vendor/lib64" in kirin
    assert "vulkan: /system/lib64/libvulkan.so, for Mali-G76, driver vulkan.mali.so" in kirin
