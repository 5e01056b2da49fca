"""Energy per token of a generative cell, through the CNN cells' energy path: a synthetic fuel
gauge (the runner's real android_fuel_gauge source, under EDGEBENCH_SYSFS_ROOT) that draws 1 W
idle and 3 W while the runner's timed window is open (the --sync-marker file exists). llm-tiny
on llama.cpp must record 2 W x each test's time over its tokens, per prompt token and per
decoded token; a cell with no energy source says why, as a CNN cell does.

The gauge reports a level, changed only when the marker comes or goes: on a loaded machine its
writer may lag, which moves the one change inside the window (its start, before the first
prefill warm-up) but never a level inside it."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from fakes.llm_models import llm_tiny_gguf  # noqa: F401  # the fixture

pytest.importorskip(
    "llama_cpp", reason="needs llama-cpp-python (pip install 'edgebench[llama-cpp]')"
)

pytestmark = pytest.mark.load_sensitive

VOLTS = 4.0
IDLE_W, EXTRA_W = 1.0, 2.0
GEN = 48


class MarkerDrivenGauge:
    """A battery's ``current_now`` (µA at ``voltage_now`` VOLTS) at IDLE_W, plus EXTRA_W while
    ``marker`` exists; a thread looks for the marker every millisecond."""

    def __init__(self, sysroot: Path, marker: Path) -> None:
        supplies = sysroot / "sys" / "class" / "power_supply"
        self.folder = supplies / "battery"
        self.folder.mkdir(parents=True)
        (self.folder / "voltage_now").write_text(f"{int(VOLTS * 1e6)}\n")
        (self.folder / "status").write_text("Discharging\n")
        (supplies / "usb").mkdir()
        (supplies / "usb" / "online").write_text("0\n")
        self.marker = marker
        self._level(False)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._follow_marker, daemon=True)

    def _level(self, active: bool) -> None:
        watts = IDLE_W + (EXTRA_W if active else 0.0)
        tmp = self.folder / "current_now.tmp"
        tmp.write_text(f"{int(watts / VOLTS * 1e6)}\n")
        tmp.replace(self.folder / "current_now")

    def _follow_marker(self) -> None:
        active = False
        while not self.stop.is_set():
            if self.marker.exists() != active:
                active = not active
                self._level(active)
            self.stop.wait(0.001)

    def __enter__(self) -> MarkerDrivenGauge:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


def run_llm_tiny(run_cli, *extra: str) -> dict:
    done = run_cli(
        [
            "run",
            "--models", "llm-tiny",
            "--frameworks", "llama.cpp",
            "--threads", "1",
            "--prompt-tokens", "256,512",
            "--gen-tokens", str(GEN),
            "--rounds", "1",
            "--format", "jsonl",
            *extra,
        ],
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (record,) = map(json.loads, done.stdout.splitlines())
    assert record["status"] == "ok", record["error"]
    return record


def run_with_gauge(run_cli, eb_env: dict[str, str], folder: Path) -> dict:
    """llm-tiny on llama.cpp with the synthetic fuel gauge under ``folder``; its record (the
    gauge's marker gone after it)."""
    sysroot, marker = folder / "sysfs", folder / "window.active"
    eb_env["EDGEBENCH_SYSFS_ROOT"] = str(sysroot)
    with MarkerDrivenGauge(sysroot, marker):
        record = run_llm_tiny(
            run_cli,
            "--energy-source", "android_fuel_gauge",
            "--sync-marker", str(marker),
            "--baseline-s", "0.3",
            "--telemetry-period", "0.005",
        )  # fmt: skip
    assert not marker.exists()
    return record


def test_energy_per_prompt_and_decoded_token_match_the_known_extra_power(
    run_cli,
    eb_env,
    tmp_path,
    llm_tiny_gguf,  # noqa: F811
):
    record = run_with_gauge(run_cli, eb_env, tmp_path)
    generation = record["generation"]
    decode_ms = sum(generation["decode_wall_ms"])
    decoded = len(generation["decode_wall_ms"]) * (GEN - 1)
    prefill_ms = sum(generation["ttft_ms"])
    prompt_tokens = sum(generation["ttft_prompt_tokens"])
    # W x ms = mJ
    known_decode, known_prefill = (
        EXTRA_W * decode_ms / decoded,
        EXTRA_W * prefill_ms / prompt_tokens,
    )
    measured_decode = generation["energy_mj_per_decode_token"]
    measured_prefill = generation["energy_mj_per_prefill_token"]
    print(
        f"per decoded token known {known_decode:.4f} mJ, measured {measured_decode:.4f} mJ; "
        f"per prompt token known {known_prefill:.5f} mJ, measured {measured_prefill:.5f} mJ"
    )
    assert record["energy"]["baseline_power_w"] == pytest.approx(IDLE_W, rel=0.05)
    assert measured_decode == pytest.approx(known_decode, rel=0.05)
    assert measured_prefill == pytest.approx(known_prefill, rel=0.1)
    # the record's energy per inference is per decoded token, as its samples are
    assert record["energy_mj_per_inf"] == measured_decode
    assert record["energy"]["energy_mj_per_inf"] == measured_decode


def test_a_generative_cell_without_an_energy_source_says_so(
    run_cli,
    eb_env,
    tmp_path,
    llm_tiny_gguf,  # noqa: F811
):
    eb_env["EDGEBENCH_SYSFS_ROOT"] = str(tmp_path / "empty-sysfs")
    record = run_llm_tiny(run_cli)
    assert record["energy_mj_per_inf"] is None
    assert record["generation"]["energy_mj_per_decode_token"] is None
    assert record["generation"]["energy_mj_per_prefill_token"] is None
    unavailable = [f for f in record["energy_flags"] if f.startswith("energy unavailable:")]
    assert unavailable and "rapl" in unavailable[0]
