"""The runner's own emulation check: the process's machine against what /proc/cpuinfo says."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from edgebench.runners.emulation import cpuinfo_family, detect
from edgebench.runners.protocol.devices import boot_id

X86_CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model name\t: AMD EPYC
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov sse sse2 avx2
"""
ARM_CPUINFO = """processor\t: 0
BogoMIPS\t: 38.40
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm
CPU implementer\t: 0x41
CPU architecture: 8
CPU part\t: 0xd44
Hardware\t: Qualcomm Technologies, Inc SM8550
"""


@pytest.mark.parametrize(
    ("text", "family", "name"),
    [
        (X86_CPUINFO, "x86", "AMD EPYC"),
        (ARM_CPUINFO, "arm", "Qualcomm Technologies, Inc SM8550"),
        ("processor : 0\n", None, None),
    ],
)
def test_cpuinfo_says_which_architecture_it_describes(text, family, name) -> None:
    assert cpuinfo_family(text) == (family, name)


def test_an_arm_process_over_an_x86_kernel_is_emulated(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(X86_CPUINFO)
    emulated, evidence = detect("aarch64", str(cpuinfo))
    assert emulated
    assert "aarch64" in evidence and "x86" in evidence and "AMD EPYC" in evidence


@pytest.mark.parametrize(
    ("machine", "text"),
    [("aarch64", ARM_CPUINFO), ("x86_64", X86_CPUINFO), ("riscv64", X86_CPUINFO)],
)
def test_a_native_or_unknown_cpu_is_not_called_emulated(tmp_path: Path, machine, text) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(text)
    assert detect(machine, str(cpuinfo)) == (False, None)


def test_without_proc_nothing_is_claimed(tmp_path: Path) -> None:
    assert detect("aarch64", str(tmp_path / "missing")) == (False, None)


def test_this_host_is_not_emulated_and_has_a_boot_id() -> None:
    assert detect()[0] is False, f"{platform.machine()} host called emulated"
    if Path("/proc/sys/kernel/random/boot_id").exists():
        assert boot_id() == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
