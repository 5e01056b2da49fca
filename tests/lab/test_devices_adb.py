"""Phones over ADB: the real adb server, our ADB device emulator, the Python runner."""

import json
import socket
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from fakes.adb_fixtures import outlived
from fakes.labs import write_phone_lab

from edgebench.lab.remote import RemoteDevice
from edgebench.lab.transports.adb import SERVER_REPLY_TIMEOUT_S, AdbTarget, AdbTransport
from edgebench.lab.transports.base import TransportError

pytestmark = pytest.mark.load_sensitive

QUICK = ["--warmup", "1", "--iterations", "5", "--min-time", "0"]


def transport_for(phone) -> AdbTransport:
    return AdbTransport(AdbTarget("emu-phone", phone.serial, "127.0.0.1", phone.adb_port))


def test_adb_transport_runs_commands_and_moves_files(emulated_phone, tmp_path):
    transport = transport_for(emulated_phone)
    result = transport.run(["printf", "%s|", "a b", "c;d"], timeout=30)
    assert result.returncode == 0 and result.stdout == "a b|c;d|"
    failing = transport.run(["sh", "-c", "echo bad >&2; exit 4"], timeout=30)
    assert failing.returncode == 4 and failing.stderr == "bad\n"
    blob = tmp_path / "blob.bin"
    blob.write_bytes(bytes(range(256)) * 2048)
    remote = str(emulated_phone.sandbox / "data" / "x" / "blob.bin")
    transport.push(blob, remote)
    assert (
        transport.sha256([remote])[remote]
        == __import__("hashlib").sha256(blob.read_bytes()).hexdigest()
    )
    back = tmp_path / "back.bin"
    assert transport.pull(remote, back) and back.read_bytes() == blob.read_bytes()
    assert not transport.pull(remote + ".missing", tmp_path / "none")


def test_device_facts_come_from_getprop_and_sysfs(emulated_phone):
    device = RemoteDevice(
        "emu-phone",
        transport_for(emulated_phone),
        work_dir=str(emulated_phone.sandbox / "wd"),
        python=sys.executable,
    )
    facts = device.facts()
    assert facts.model == "EmuPhone"
    assert facts.os_version == "Android 14"
    assert facts.soc == "SM8550"
    assert facts.frameworks["onnxruntime"]["available"]
    assert facts.cpus


def test_run_over_adb_and_ssh_lands_in_one_matrix(run_cli, eb_env, phone_and_board_lab, conv_model):
    lab = phone_and_board_lab
    result = run_cli(
        [
            "run",
            "--lab",
            str(lab),
            "--devices",
            "emu-phone,ssh-box",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime",
            "--cores",
            "0",
            *QUICK,
        ]
    )
    assert result.returncode == 0, result.stderr
    matrix = result.stdout
    assert "emu-phone" in matrix and "ssh-box" in matrix
    (records_path,) = Path(eb_env["EDGEBENCH_RESULTS"]).glob("*/records.jsonl")
    records = {r["device"]: r for r in map(json.loads, records_path.read_text().splitlines())}
    for name in ("emu-phone", "ssh-box"):
        assert records[name]["status"] == "ok", records[name]["error"]
        assert records[name]["cores_effective"] == [0]
        assert records[name]["output_check"]["passed"]
    assert records["emu-phone"]["device_info"]["model"] == "EmuPhone"


def test_an_adb_server_that_never_answers_is_called_gone_not_waited_on():
    """A server that accepts connections and never replies (wedged) ends the command with the
    transport's error once its reply timeout passes; before, the device list was awaited for
    ever and the run hung (the test bounds its own wait, and closing the listener ends it)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections complete in the kernel's backlog; nothing is answered
        port = silent.getsockname()[1]
        transport = AdbTransport(AdbTarget("emu-phone", "127.0.0.1:5555", "127.0.0.1", port))
        outcome: list[BaseException | None] = []

        def command() -> None:
            try:
                transport.run(["true"], timeout=10)
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        worker = threading.Thread(target=command, daemon=True)
        worker.start()
        worker.join(timeout=SERVER_REPLY_TIMEOUT_S * 3)
        assert not worker.is_alive(), "the command still waits on a server that never answers"
    (error,) = outcome
    assert isinstance(error, TransportError) and "no adb server" in str(error), error


def test_pulled_cable_fails_cleanly(emulated_phone, tmp_path):
    transport = transport_for(emulated_phone)
    assert transport.run(["true"], timeout=10).returncode == 0
    emulated_phone.emulator.stop()
    try:
        transport.run(["true"], timeout=10)
    except TransportError as exc:
        assert "emu-phone" in str(exc)
    else:
        raise AssertionError("a command on a stopped phone must raise TransportError")


def test_phone_without_python_runs_the_native_tool(
    run_cli, eb_env, emulated_phone, tmp_path, conv_model
):
    # OpenVINO's real benchmark_app (from the openvino wheel) stands in for a phone's binary.
    import shutil

    beside = Path(sys.executable).with_name("benchmark_app")
    tool = str(beside) if beside.is_file() else shutil.which("benchmark_app")
    assert tool, "openvino's benchmark_app must be installed (edgebench[openvino])"
    tools_bin = tmp_path / "native-bin"
    tools_bin.mkdir()
    shutil.copy(tool, tools_bin / "benchmark_app")
    input_file = tmp_path / "input.npy"
    np.save(input_file, np.ones([1, 3, 32, 32], dtype=np.float32))
    lab = write_phone_lab(
        tmp_path / "lab.toml",
        emulated_phone,
        ['runner = "framework-tools"', f'tools_bin = "{tools_bin}"'],
    )
    result = run_cli(
        [
            "run",
            "--lab",
            str(lab),
            "--devices",
            "emu-phone",
            "--models",
            str(conv_model),
            "--frameworks",
            "openvino,ncnn",
            "--format",
            "jsonl",
            "--iterations",
            "20",
            "--cores",
            "0",
            "--input",
            str(input_file),
        ]
    )
    assert result.returncode == 0, result.stderr
    records = {r["framework"]: r for r in map(json.loads, result.stdout.splitlines())}
    ov = records["openvino"]
    assert ov["status"] == "ok", ov["error"]
    assert any("--input is not used here" in w for w in ov["warnings"])
    assert ov["native"]["tool"] == "benchmark_app"
    assert ov["n_samples"] == 20
    assert 0 < ov["latency_ms"]["min"] <= ov["latency_ms"]["p50"] <= ov["native"]["max_ms"]
    assert ov["samples_ns"] == []  # the tool gives no per-iteration samples; none are invented
    ncnn = records["ncnn"]
    assert ncnn["status"] == "skipped" and "benchncnn not found" in ncnn["error"]


def test_cluster_names_from_the_profile_pin_on_the_device(
    run_cli, eb_env, emulated_phone, tmp_path, conv_model
):
    # A two-core "phone" profile: little = cpu 0, big = cpu 1 (this host has at least 2 cpus).
    profile = tmp_path / "two-core-phone.toml"
    profile.write_text(
        "\n".join(
            [
                'schema = "edgebench.profile/1"',
                'name = "two-core-phone"',
                'description = "test phone with one little and one big core"',
                'transport = "adb"',
                'runner = "python"',
                'work_dir = "/data/local/tmp/edgebench"',
                "[[clusters]]",
                'name = "little"',
                'cpus = "0"',
                "max_freq_mhz = 1800",
                "[[clusters]]",
                'name = "big"',
                'cpus = "1"',
                "max_freq_mhz = 3000",
                "[energy]",
                'source = "none"',
            ]
        )
        + "\n"
    )
    lab = write_phone_lab(tmp_path / "lab.toml", emulated_phone, [f'profile = "{profile}"'])
    result = run_cli(
        [
            "run",
            "--lab",
            str(lab),
            "--devices",
            "emu-phone",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime",
            "--cores",
            "big",
            "--cores",
            "little",
            "--format",
            "jsonl",
            *QUICK,
        ]
    )
    assert result.returncode == 0, result.stderr
    records = {r["cores"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert records["big"]["cores_effective"] == [1]
    assert records["little"]["cores_effective"] == [0]
    assert not any("asked for cores" in w for r in records.values() for w in r["warnings"])
    refused = run_cli(
        [
            "run",
            "--lab",
            str(lab),
            "--devices",
            "emu-phone",
            "--models",
            str(conv_model),
            "--frameworks",
            "onnxruntime",
            "--cores",
            "prime",
            *QUICK,
        ]
    )
    assert refused.returncode == 2 and "no cluster 'prime'" in refused.stderr


def test_devices_command_lists_phone_and_board(run_cli, phone_and_board_lab):
    lab = phone_and_board_lab
    result = run_cli(["devices", "--lab", str(lab)])
    assert result.returncode == 0, result.stderr
    phone, board = result.stdout.split("\nssh-box")[0], result.stdout.split("\nssh-box")[1]
    assert "emu-phone" in phone and "online" in phone
    assert "model: EmuPhone" in phone and "soc: SM8550" in phone and "Android 14" in phone
    assert "frameworks: onnxruntime" in phone
    assert "online" in board and "profile: x86-generic" in board


def test_hung_native_tool_is_killed_on_the_phone(run_cli, emulated_phone, tmp_path, conv_model):
    """A tool that ignores the hang-up the closed stream sends must still not outlive its
    cell: edgebench kills it by the PID it recorded."""
    tools_bin = tmp_path / "native-bin"
    tools_bin.mkdir()
    tool = tools_bin / "benchmark_app"
    tool.write_text("#!/bin/sh\ntrap '' HUP\nexec sleep 300\n")
    tool.chmod(0o755)
    lab = write_phone_lab(
        tmp_path / "lab.toml",
        emulated_phone,
        ['runner = "framework-tools"', f'tools_bin = "{tools_bin}"'],
    )
    where = ["--lab", str(lab), "--devices", "emu-phone", "--models", str(conv_model)]
    result = run_cli(
        ["run", *where, "--frameworks", "openvino", "--timeout", "3", "--format", "jsonl", *QUICK]
    )
    assert result.returncode == 1, result.stderr
    (record,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert record["status"] == "failed" and "timed out" in record["error"]
    pid_file = emulated_phone.sandbox / "data" / "local" / "tmp" / "edgebench" / "run.pid"
    assert not outlived(pid_file), "the hung tool outlived its cell"


def test_devices_says_a_framework_tools_phone_needs_no_python(run_cli, emulated_phone, tmp_path):
    lab = write_phone_lab(tmp_path / "lab.toml", emulated_phone, ['runner = "framework-tools"'])
    result = run_cli(["devices", "--lab", str(lab), "--devices", "emu-phone"])
    assert result.returncode == 0, result.stderr
    assert "runner: framework-tools" in result.stdout, result.stdout
    (python,) = [line for line in result.stdout.splitlines() if "python: " in line]
    assert "python: not needed;" in python and "not usable" not in result.stdout, python
