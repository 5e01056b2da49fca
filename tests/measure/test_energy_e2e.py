"""Known energy through the whole path: a synthetic battery on the emulated phone.

The phone's sysfs root is its sandbox (EDGEBENCH_SYSFS_ROOT), where a fuel gauge with the
real layout reports 0.4 W at idle and 2.4 W while the runner's timed window is open (the
--sync-marker file exists). The measured energy per inference must match 2.0 W x window / n.
"""

import json
import sys
import threading
from pathlib import Path

import pytest
from fakes.labs import write_phone_lab

pytestmark = pytest.mark.load_sensitive

VOLTAGE_UV = 4_000_000
IDLE_UA = 100_000  # 0.4 W
EXTRA_UA = 500_000  # +2.0 W while inferences run
EXTRA_W = EXTRA_UA / 1e6 * VOLTAGE_UV / 1e6


class SyntheticBattery:
    """Plays the phone's fuel gauge: draws more current while the marker file exists."""

    def __init__(self, sysroot: Path, marker: Path) -> None:
        self.folder = sysroot / "sys" / "class" / "power_supply" / "battery"
        self.folder.mkdir(parents=True)
        (self.folder / "voltage_now").write_text(f"{VOLTAGE_UV}\n")
        (self.folder / "status").write_text("Discharging\n")
        usb = sysroot / "sys" / "class" / "power_supply" / "usb"
        usb.mkdir(parents=True)
        (usb / "online").write_text("0\n")
        self.current = self.folder / "current_now"
        self.current.write_text(f"-{IDLE_UA}\n")  # this gauge reports discharge as negative
        self.marker = marker
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        active = None
        while not self.stop.is_set():
            now = self.marker.exists()
            if now != active:
                tmp = self.current.with_suffix(".tmp")
                tmp.write_text(f"-{IDLE_UA + (EXTRA_UA if now else 0)}\n")
                tmp.replace(self.current)
                active = now
            self.stop.wait(0.001)  # the gauge's own update period

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=5)


@pytest.mark.alone
def test_energy_per_inference_matches_the_known_extra_power(run_cli, sysfs_phone, tmp_path):
    from fakes.models import save_conv_model

    sandbox = sysfs_phone.sandbox
    model = save_conv_model(tmp_path / "conv.onnx", [1, 3, 64, 64], channels=32)
    marker = sandbox / "window.active"
    lab = write_phone_lab(tmp_path / "lab.toml", sysfs_phone)
    with SyntheticBattery(sandbox, marker):
        result = run_cli(
            [
                "run",
                "--lab",
                str(lab),
                "--devices",
                "emu-phone",
                "--models",
                str(model),
                "--frameworks",
                "onnxruntime",
                "--energy-source",
                "android_fuel_gauge",
                "--sync-marker",
                str(marker),
                "--baseline-s",
                "0.5",
                "--telemetry-period",
                "0.01",
                "--min-time",
                "2",
                "--iterations",
                "20",
                "--warmup",
                "2",
                "--format",
                "jsonl",
            ]
        )
    assert result.returncode == 0, result.stderr
    (record,) = map(json.loads, result.stdout.splitlines())
    assert record["status"] == "ok", record["error"]
    energy = record["energy"]
    window = energy["window_s"]
    expected_mj = EXTRA_W * window / record["n_samples"] * 1000
    print(
        f"known extra power {EXTRA_W:.3f} W, measured {energy['active_power_w']:.3f} W; "
        f"energy/inference known {expected_mj:.4f} mJ, measured "
        f"{record['energy_mj_per_inf']:.4f} mJ"
    )
    assert energy["baseline_power_w"] == pytest.approx(0.4, rel=0.02)
    assert energy["active_power_w"] == pytest.approx(EXTRA_W, rel=0.05)
    assert record["energy_mj_per_inf"] == pytest.approx(expected_mj, rel=0.05)
    assert record["avg_power_w"] == pytest.approx(0.4 + EXTRA_W, rel=0.05)
    assert not [f for f in record["energy_flags"] if "charging" in f or "coarse" in f]
    assert record["telemetry"]["source"]["kind"] == "android_fuel_gauge"
    assert not marker.exists()  # the runner removed it when the window closed


def test_local_cell_without_a_source_says_energy_unavailable(run_cli, conv_model, eb_env, tmp_path):
    eb_env["EDGEBENCH_SYSFS_ROOT"] = str(tmp_path / "empty-sysfs")
    result = run_cli(
        [
            "run",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime",
            "--format",
            "jsonl",
            "--warmup",
            "1",
            "--iterations",
            "5",
            "--min-time",
            "0",
        ]
    )
    assert result.returncode == 0, result.stderr
    (record,) = map(json.loads, result.stdout.splitlines())
    assert record["energy_mj_per_inf"] is None and record["avg_power_w"] is None
    unavailable = [f for f in record["energy_flags"] if f.startswith("energy unavailable:")]
    assert unavailable and "rapl" in unavailable[0]


@pytest.mark.alone
def test_native_tool_gets_energy_from_a_device_shell_loop(run_cli, sysfs_phone, tmp_path):
    import shutil

    from fakes.models import save_conv_model

    sandbox = sysfs_phone.sandbox
    model = save_conv_model(tmp_path / "conv.onnx", [1, 3, 64, 64], channels=32)
    marker = sandbox / "window.active"
    tools_bin = tmp_path / "bin"
    tools_bin.mkdir()
    beside = Path(sys.executable).with_name("benchmark_app")
    shutil.copy(beside if beside.is_file() else shutil.which("benchmark_app"), tools_bin)
    lab = write_phone_lab(
        tmp_path / "lab.toml",
        sysfs_phone,
        ['runner = "framework-tools"', f'tools_bin = "{tools_bin}"'],
    )
    with SyntheticBattery(sandbox, marker):
        result = run_cli(
            [
                "run",
                "--lab",
                str(lab),
                "--devices",
                "emu-phone",
                "--models",
                str(model),
                "--frameworks",
                "openvino",
                "--energy-source",
                "android_fuel_gauge",
                "--sync-marker",
                str(marker),
                "--baseline-s",
                "0.5",
                "--telemetry-period",
                "0.02",
                "--iterations",
                "200",
                "--format",
                "jsonl",
            ]
        )
    assert result.returncode == 0, result.stderr
    (record,) = map(json.loads, result.stdout.splitlines())
    assert record["status"] == "ok", record["error"]
    assert record["telemetry"]["source"]["sampled_by"] == "device shell loop"
    energy = record["energy"]
    avg_ms = record["latency_ms"]["mean"]
    print(
        f"native: known extra power {EXTRA_W:.3f} W, measured {energy['active_power_w']:.3f} W; "
        f"energy/inference known {EXTRA_W * avg_ms:.4f} mJ, measured "
        f"{record['energy_mj_per_inf']:.4f} mJ"
    )
    assert energy["baseline_power_w"] == pytest.approx(0.4, rel=0.05)
    assert energy["active_power_w"] == pytest.approx(EXTRA_W, rel=0.1)
    assert record["energy_mj_per_inf"] == pytest.approx(EXTRA_W * avg_ms, rel=0.1)
    assert any(f.startswith("native tool: energy/inference") for f in record["energy_flags"])
