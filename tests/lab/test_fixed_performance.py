"""Android's fixed-performance mode over the real adb server and the emulated phone: what
`cmd power` answers (Android 11+ with and without the Power HAL's mode, Android 10), a run with
--fixed-performance that records the mode on and turns it off after, a refused one that warns
and finishes, and SIGTERM in the middle of a cell that still turns it off."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fakes.adb_fixtures import EmulatedPhone, connect_phone, disconnect_phone
from fakes.cpufreq_tree import write_phone_cpus
from fakes.labs import write_phone_lab

from edgebench.lab.remote import RemoteDevice
from edgebench.lab.transports.adb import AdbTarget, AdbTransport
from edgebench.measure.fixed_performance import set_fixed_performance

pytestmark = pytest.mark.load_sensitive

QUICK = ["--warmup", "1", "--iterations", "5", "--min-time", "0", "--format", "jsonl"]
REFUSAL = (
    "Failed to set FIXED_PERFORMANCE mode This is likely because Power HAL AIDL is not "
    "implemented on this device"
)
ANDROID_10 = {"ro.build.version.sdk": "29", "ro.build.version.release": "10"}


@contextmanager
def phone(adb_server, sandbox: Path, **options) -> Iterator[EmulatedPhone]:
    """An emulated phone whose runner reads /sys from its sandbox, with a big.LITTLE cpufreq
    tree there."""
    sandbox.mkdir(parents=True)
    write_phone_cpus(sandbox)
    connected = connect_phone(
        adb_server, sandbox, env={"EDGEBENCH_SYSFS_ROOT": str(sandbox)}, **options
    )
    try:
        yield connected
    finally:
        disconnect_phone(connected)


def device_of(connected: EmulatedPhone) -> RemoteDevice:
    target = AdbTarget("emu-phone", connected.serial, "127.0.0.1", connected.adb_port)
    return RemoteDevice(
        "emu-phone",
        AdbTransport(target),
        work_dir=str(connected.sandbox / "wd"),
        python=sys.executable,
    )


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        ({}, None),
        ({"power_modes": ()}, REFUSAL),
        ({"props": ANDROID_10}, "Unknown command: set-fixed-performance-mode-enabled"),
    ],
    ids=["android-14", "no-power-hal-mode", "android-10"],
)
def test_cmd_power_answers_as_android_does(adb_server, tmp_path, options, refusal):
    with phone(adb_server, tmp_path / "phone", **options) as connected:
        device = device_of(connected)
        said = device.transport.run(
            ["cmd", "power", "set-fixed-performance-mode-enabled", "true"], timeout=30
        )
        if refusal is None:
            assert (said.returncode, said.stdout, said.stderr) == (0, "", "")
            assert connected.emulator.fixed_performance() is True
            assert set_fixed_performance(device, False) is None
            assert connected.emulator.fixed_performance() is False
        else:
            assert said.returncode == 255 and " ".join(said.stderr.split()) == refusal
            problem = set_fixed_performance(device, True)
            assert problem == (
                "`cmd power set-fixed-performance-mode-enabled true` failed (exit 255): " + refusal
            )
            assert connected.emulator.fixed_performance() is None


def run_args(lab: Path, model: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--lab",
        str(lab),
        "--devices",
        "emu-phone",
        "--models",
        str(model),
        "--frameworks",
        "onnxruntime",
        "--cores",
        "1",
        "--energy-source",
        "none",
        "--fixed-performance",
        *extra,
    ]


def measure_one(run_cli, tmp_path: Path, connected: EmulatedPhone, model: Path):
    """One quick cell on the phone with --fixed-performance: the run's output and its record."""
    lab = write_phone_lab(tmp_path / "lab.toml", connected)
    result = run_cli(run_args(lab, model, *QUICK))
    assert result.returncode == 0, result.stderr
    (record,) = map(json.loads, result.stdout.splitlines())
    assert record["status"] == "ok", record["error"]
    return result, record


def test_a_run_turns_the_mode_on_for_its_cells_and_off_after(
    run_cli, adb_server, tmp_path, conv_model
):
    with phone(adb_server, tmp_path / "phone") as connected:
        result, record = measure_one(run_cli, tmp_path, connected, conv_model)
        assert record["fixed_performance"] is True
        assert "emu-phone: fixed-performance mode on" in result.stderr
        assert "emu-phone: fixed-performance mode off again" in result.stderr
        assert connected.emulator.fixed_performance() is False
        (core,) = record["telemetry"]["state_before"]["cpus"].items()
        assert core[0] == "1"
        assert (core[1]["scaling_min_khz"], core[1]["scaling_max_khz"]) == (300000, 1804800)
        assert (core[1]["min_khz"], core[1]["max_khz"]) == (300000, 1804800)
        assert not any("not applied" in w for w in record["warnings"])


def test_a_refused_mode_is_a_warning_and_the_run_finishes(
    run_cli, adb_server, tmp_path, conv_model
):
    with phone(adb_server, tmp_path / "phone", power_modes=()) as connected:
        result, record = measure_one(run_cli, tmp_path, connected, conv_model)
        assert record["fixed_performance"] is False
        assert "fixed-performance mode not set" in result.stderr
        (warning,) = [w for w in record["warnings"] if "fixed-performance" in w]
        assert warning.startswith("--fixed-performance not applied: `cmd power")
        assert warning.endswith(REFUSAL)
        assert connected.emulator.fixed_performance() is None


def test_sigterm_during_a_cell_still_turns_the_mode_off(eb_env, adb_server, tmp_path, conv_model):
    with phone(adb_server, tmp_path / "phone") as connected:
        lab = write_phone_lab(tmp_path / "lab.toml", connected)
        args = run_args(lab, conv_model, "--min-time", "60", "--max-time", "120")
        proc = subprocess.Popen(
            [sys.executable, "-m", "edgebench", *args],
            env=eb_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: list[str] = []
        measuring = threading.Event()

        def read_stderr() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:  # ends when edgebench exits
                lines.append(line)
                if "fixed-performance mode on" in line:
                    measuring.set()

        reader = threading.Thread(target=read_stderr, daemon=True)
        reader.start()
        try:
            assert measuring.wait(120), "".join(lines)
            assert connected.emulator.fixed_performance() is True
            # The runner writes its PID on the phone once the cell is running there.
            pid_file = connected.sandbox / "data/local/tmp/edgebench/run.pid"
            deadline = time.monotonic() + 120
            while not pid_file.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert pid_file.exists(), "".join(lines)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=120) == 128 + signal.SIGTERM, "".join(lines)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
            reader.join(timeout=30)
        text = "".join(lines)
        assert "emu-phone: fixed-performance mode off again" in text, text
        assert connected.emulator.fixed_performance() is False
