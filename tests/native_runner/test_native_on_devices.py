"""edgebench-native as a lab device's runner, end to end through `edgebench run`: on this x86
host, and built for aarch64 on the emulated arm64 board reached as an ADB phone whose lab
entry names no usable Python (runner "auto" then picks the native build)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from fakes.adb_fixtures import EmulatedPhone, outlived
from fakes.arm_board import BOARD_PYTHON, board_lab_entry
from fakes.labs import write_phone_lab
from fakes.native_builds import host_native_lab
from fakes.records import stored_records

from edgebench.builds.native_runner import BuiltRunner

RUN_TIMEOUT_S = 1200


def test_run_on_the_host_with_edgebench_native(
    run_cli, eb_env, tmp_path: Path, native_x86: BuiltRunner
) -> None:
    lab = host_native_lab(tmp_path)
    result = run_cli(
        [
            *("run", "--lab", str(lab), "--devices", "host-native"),
            *("--models", "mobilenetv2", "--frameworks", "ncnn,onnxruntime"),
            *("--warmup", "1", "--iterations", "6", "--min-time", "0", "--rounds", "1"),
        ],
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    records = {r["framework"]: r for r in stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))}
    ncnn = records["ncnn"]
    assert ncnn["status"] == "ok", ncnn.get("error")
    assert ncnn["n_samples"] == 6 and len(ncnn["samples_ns"]) == 6
    assert 0 < ncnn["latency_ms"]["p50"] <= ncnn["latency_ms"]["p99"]
    assert ncnn["output_check"]["passed"], ncnn["output_check"]
    assert ncnn["framework_version"] == native_x86.frameworks["ncnn"]
    assert ncnn["device_info"]["runner"] == "edgebench-native (x86_64-linux)"
    onnxruntime = records["onnxruntime"]
    assert onnxruntime["status"] == "unsupported"
    assert "edgebench-native has no onnxruntime backend" in onnxruntime["error"]


def test_phone_without_python_runs_the_aarch64_build(
    run_cli,
    eb_env,
    tmp_path: Path,
    native_arm: BuiltRunner,
    board_phone: EmulatedPhone,
    board_work_dir: str,
) -> None:
    """The done-when of the native runner: an emulated aarch64 phone whose Python does not
    run gives p50/p90/p99 from per-iteration samples and a passing output check, at fp32 and
    fp16. ``emulated = false`` asks for real timing under the emulator (slow, but these are
    the samples a phone would give)."""
    entry = board_lab_entry(
        "phone", board_work_dir, phone=board_phone, extra=["emulated = false", 'runner = "auto"']
    )
    lab = tmp_path / "lab.toml"
    lab.write_text(entry.replace(f'python = "{BOARD_PYTHON}"', 'python = "/system/bin/python3"'))
    devices = run_cli(["devices", "--lab", str(lab)], timeout=600)
    assert devices.returncode == 0, devices.stderr
    block = next(b for b in devices.stdout.split("\n\n") if b.startswith("phone"))
    assert "runner: edgebench-native (aarch64-linux) (no usable Python" in block, block
    assert "machine: aarch64" in block and "python: not needed;" in block, block
    built_in = block.split("frameworks: ", 1)[1].splitlines()[0].split(", ")
    assert "ncnn" in built_in and set(built_in) == set(native_arm.frameworks), block
    result = run_cli(
        [
            *("run", "--lab", str(lab), "--devices", "phone"),
            *("--models", "mobilenetv2", "--frameworks", "ncnn", "--precision", "fp32,fp16"),
            # Two samples give the percentiles; each fp16 one takes 8 s under qemu.
            *("--warmup", "0", "--iterations", "2", "--min-time", "0", "--rounds", "1"),
        ],
        timeout=RUN_TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    records = {r["precision"]: r for r in stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))}
    assert set(records) == {"fp32", "fp16"}
    for precision, record in records.items():
        assert record["status"] == "ok", (precision, record.get("error"))
        assert record["device_info"]["machine"] == "aarch64"
        assert record["device_info"]["python"] is None
        assert record["n_samples"] == 2 and record["warmup_samples_ns"] == []
        assert (
            record["latency_ms"]["p50"]
            <= record["latency_ms"]["p90"]
            <= record["latency_ms"]["p99"]
        )
        assert record["output_check"]["passed"], (precision, record["output_check"])
    # fp16 on ARM is fp16 arithmetic: further from the reference than fp32, inside its rule.
    assert (
        records["fp16"]["output_check"]["rel_error"] > records["fp32"]["output_check"]["rel_error"]
    )


def test_auto_falls_back_when_a_phone_has_neither_python_nor_a_build(
    run_cli, eb_env, tmp_path: Path, emulated_phone: EmulatedPhone
) -> None:
    lab = write_phone_lab(
        tmp_path / "lab.toml", emulated_phone, ['runner = "auto"', 'tools_bin = "/nowhere"']
    )
    lab.write_text(lab.read_text().replace(sys.executable, "/system/bin/python3"))
    eb_env["EDGEBENCH_NATIVE_DIR"] = str(tmp_path / "no-builds")
    devices = run_cli(["devices", "--lab", str(lab)])
    assert devices.returncode == 0, devices.stderr
    block = next(b for b in devices.stdout.split("\n\n") if b.startswith("emu-phone"))
    assert "runner: framework-tools (no usable Python" in block, block
    assert "`edgebench runners build --target x86_64-linux`" in block, block
    # Asked for by name, the missing build is the device's problem, said once per cell.
    lab.write_text(lab.read_text().replace('runner = "auto"', 'runner = "edgebench-native"'))
    devices = run_cli(["devices", "--lab", str(lab)])
    assert "runner: edgebench-native; not usable: no edgebench-native build" in devices.stdout
    run = run_cli(
        [
            *("run", "--lab", str(lab), "--devices", "emu-phone", "--models", "mobilenetv2"),
            *("--frameworks", "ncnn", "--format", "jsonl"),
        ]
    )
    (record,) = [json.loads(line) for line in run.stdout.splitlines()]
    assert record["status"] == "skipped", record
    assert "edgebench runners build --target x86_64-linux" in record["error"], record


@pytest.mark.alone
def test_auto_picks_the_build_and_the_binary_marks_the_telemetry_window(
    run_cli, eb_env, tmp_path: Path, emulated_phone: EmulatedPhone, native_x86: BuiltRunner
) -> None:
    """Over ADB: the binary is deployed once (hash-checked), its timed window is marked by the
    binary itself in the shell sampler's files, so load and warm-up stay outside it."""
    lab = write_phone_lab(tmp_path / "lab.toml", emulated_phone, ['runner = "auto"'])
    lab.write_text(lab.read_text().replace(sys.executable, "/system/bin/python3"))
    result = run_cli(
        [
            *("run", "--lab", str(lab), "--devices", "emu-phone", "--models", "mobilenetv2"),
            *("--frameworks", "ncnn", "--threads", "1,2", "--warmup", "3", "--iterations", "5"),
            *("--min-time", "0", "--rounds", "1", "--baseline-s", "0"),
        ],
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    records = stored_records(Path(eb_env["EDGEBENCH_RESULTS"]))
    assert len(records) == 2
    for record in records:
        assert record["status"] == "ok", record.get("error")
        assert record["device_info"]["runner"] == "edgebench-native (x86_64-linux)"
        assert record["output_check"]["passed"]
        marks = record["telemetry"]["marks"]
        window_s = (marks["window_end"] - marks["window_start"]) / 1e9
        timed_s = sum(record["samples_ns"]) / 1e9
        # The window holds the timed loop and little else: not the load, not the warm-up.
        assert timed_s <= window_s < timed_s + record["load_ms"] / 1e3, (window_s, timed_s)
    binary = emulated_phone.sandbox / "data/local/tmp/edgebench/bin/edgebench-native"
    assert binary.read_bytes() == native_x86.path.read_bytes()


def test_a_timed_out_native_runner_is_killed_on_the_phone(
    run_cli, eb_env, tmp_path: Path, emulated_phone: EmulatedPhone, native_x86: BuiltRunner
) -> None:
    """The binary runs inside the telemetry wrapper: the PID it recorded is its own (not the
    wrapper shell's), so the timeout kill lands on it."""
    lab = write_phone_lab(tmp_path / "lab.toml", emulated_phone, ['runner = "edgebench-native"'])
    result = run_cli(
        [
            *("run", "--lab", str(lab), "--devices", "emu-phone", "--models", "mobilenetv2"),
            *("--frameworks", "ncnn", "--min-time", "600", "--max-time", "600"),
            *("--timeout", "8", "--rounds", "1", "--format", "jsonl"),
        ],
        timeout=300,
    )
    assert result.returncode == 1, result.stderr[-2000:]
    (record,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert record["status"] == "failed" and "timed out" in record["error"]
    pid_file = emulated_phone.sandbox / "data" / "local" / "tmp" / "edgebench" / "run.pid"
    assert not outlived(pid_file), "edgebench-native outlived its cell"
