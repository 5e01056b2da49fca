"""How the host decides a device's CPU is emulated: the runner's evidence, the host's own
boot-id check, and the lab's word over both."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

import pytest

from edgebench.lab.device import LocalDevice
from edgebench.lab.runner_choice import Probe, RunnerChoice

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


class ProbedDevice(LocalDevice):
    """This host, with the runner's probe answer replaced by ``answer``."""

    def __init__(self, answer: dict[str, Any], override: bool | None = None) -> None:
        super().__init__("probed")
        self.answer = answer
        self.emulated_override = override

    def probe_runner(self, choice: RunnerChoice) -> Probe:
        return Probe({"frameworks": {}, "python": "3.11.2", **self.answer})


@pytest.fixture
def host_boot_id() -> str:
    if not BOOT_ID.exists():
        pytest.skip("no /proc/sys/kernel/random/boot_id on this host")
    return BOOT_ID.read_text().strip()


def test_the_runners_evidence_makes_the_device_emulated() -> None:
    facts = ProbedDevice({"machine": "aarch64", "emulated": True, "emulation": "cpuinfo says x86"})
    assert facts.facts().emulated and facts.facts().emulation == "cpuinfo says x86"


def test_same_kernel_other_machine_is_emulated(host_boot_id: str) -> None:
    other = "aarch64" if platform.machine() != "aarch64" else "x86_64"
    facts = ProbedDevice({"machine": other, "boot_id": host_boot_id}).facts()
    assert facts.emulated
    assert "same boot id" in facts.emulation and other in facts.emulation


def test_same_kernel_same_machine_or_another_kernel_is_not(host_boot_id: str) -> None:
    native = ProbedDevice({"machine": platform.machine(), "boot_id": host_boot_id}).facts()
    assert not native.emulated and native.emulation is None
    elsewhere = ProbedDevice({"machine": "aarch64", "boot_id": "another-kernel"}).facts()
    assert not elsewhere.emulated


def test_the_lab_has_the_last_word(host_boot_id: str) -> None:
    evidence = {"machine": "aarch64", "emulated": True, "emulation": "cpuinfo says x86"}
    said_native = ProbedDevice(evidence, override=False).facts()
    assert not said_native.emulated and said_native.emulation is None
    said_emulated = ProbedDevice({"machine": platform.machine()}, override=True).facts()
    assert said_emulated.emulated and "lab file" in said_emulated.emulation


def test_the_lab_key_takes_only_true_or_false(tmp_path: Path) -> None:
    from edgebench.errors import UserError
    from edgebench.lab.lab_file import load_lab

    lab = tmp_path / "lab.toml"
    lab.write_text('[devices.b]\ntransport = "ssh"\nhost = "127.0.0.1"\nemulated = "yes"\n')
    with pytest.raises(UserError, match=r"emulated.*must be true or false, not a string"):
        load_lab(lab)
    lab.write_text('[devices.b]\ntransport = "ssh"\nhost = "127.0.0.1"\nemulated = true\n')
    assert load_lab(lab).get("b").emulated is True
