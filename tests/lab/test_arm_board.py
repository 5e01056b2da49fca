"""Real ARM in the suite: the frameworks' aarch64 builds run on the emulated arm64 board
(qemu user mode through binfmt_misc), reached as a lab device over the real sshd and as an
emulated ADB phone, with every output checked against ONNX Runtime on this x86 host.

Skipped, with what is missing and the line that fixes it, only where this machine cannot
emulate aarch64 (not root, or no qemu-user-static, binfmt_misc, mmdebstrap): see
fakes/arm_board.py. One emulated inference takes seconds, so each cell runs one.
"""

from __future__ import annotations

import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.adb_fixtures import EmulatedPhone
from fakes.arm_board import board_lab_entry
from fakes.corrupt import perturb_largest_weight
from fakes.records import stored_records
from fakes.ssh_fixtures import SshServer

from edgebench.lab import emulated_board
from edgebench.models import builtin_model_path

ALL_FRAMEWORKS = "onnxruntime,ncnn,mnn,openvino,tflite"
FP16_FRAMEWORKS = "ncnn,mnn,openvino,tflite"  # onnxruntime's CPU provider has no fp16
RUN_TIMEOUT_S = 1500


@pytest.fixture(scope="module")
def arm_artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Converted models shared by this module's runs: conversion is tested elsewhere, and
    converting the same models again for each test would cost minutes."""
    return tmp_path_factory.mktemp("arm-artifacts")


@pytest.fixture
def arm_env(eb_env: dict[str, str], arm_artifacts: Path) -> dict[str, str]:
    (Path(eb_env["EDGEBENCH_CACHE"]) / "artifacts").symlink_to(arm_artifacts)
    return eb_env


def _lab(tmp_path: Path, *entries: str) -> Path:
    lab = tmp_path / "lab.toml"
    lab.write_text("\n".join(entries))
    return lab


def _start(args: list[str], env: dict[str, str], results: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "edgebench", *args],
        env={**env, "EDGEBENCH_RESULTS": str(results)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


def test_devices_shows_aarch64_and_emulated_from_inside_the_board(
    run_cli, tmp_path, board_sshd: SshServer, board_phone: EmulatedPhone, board_work_dir: str
) -> None:
    lab = _lab(
        tmp_path,
        board_lab_entry("arm-ssh", f"{board_work_dir}/ssh", server=board_sshd),
        board_lab_entry("arm-adb", f"{board_work_dir}/adb", phone=board_phone),
        board_lab_entry(
            "arm-said-native", f"{board_work_dir}/n", server=board_sshd, extra=["emulated = false"]
        ),
    )
    result = run_cli(["devices", "--lab", str(lab)], timeout=600)
    assert result.returncode == 0, result.stderr
    blocks = {b.split()[0]: b for b in result.stdout.split("\n\n") if b.strip()}
    board_python = emulated_board.board_status().info["python"]
    for name in ("arm-ssh", "arm-adb"):
        block = blocks[name]
        assert "online" in block, block
        assert "machine: aarch64 (emulated" in block, block
        # The runner answered from inside the root: the board's Python, not the host's.
        assert f"python: {board_python};" in block, block
        assert "emulated: the process runs as aarch64 but the kernel's /proc/cpuinfo" in block
        assert "onnxruntime, mnn, ncnn, tflite, openvino" in block, block
    said_native = blocks["arm-said-native"]  # the lab's word wins over the evidence
    assert "machine: aarch64" in said_native and "(emulated" not in said_native, said_native
    # The host reports its own machine, and is not called emulated.
    assert f"machine: {platform.machine()}\n" in blocks["local"] + "\n", blocks["local"]
    assert "emulated" not in blocks["local"]


def test_cells_run_on_arm_over_ssh_and_adb_with_outputs_checked(
    arm_env, tmp_path, board_sshd: SshServer, board_phone: EmulatedPhone, board_work_dir: str
) -> None:
    """Both transports at once (each keeps one core busy): fp32 over SSH for all five
    frameworks on mobilenetv2 and the detector, fp16 over ADB for the four that have it on
    mobilenetv2 (the detector at fp16 took 4.5 of this test's 7 minutes under qemu's software
    fp16). Each entry's device lock sits beside its work dir, so the two runs do not wait for
    each other on the one board."""
    lab = _lab(
        tmp_path,
        board_lab_entry("arm-ssh", f"{board_work_dir}/ssh/wd", server=board_sshd),
        board_lab_entry("arm-adb", f"{board_work_dir}/adb/wd", phone=board_phone),
    )
    common = ["run", "--lab", str(lab)]
    results = {"ssh": tmp_path / "results-ssh", "adb": tmp_path / "results-adb"}
    procs = {
        "ssh": _start(
            [
                *common,
                "--devices",
                "arm-ssh",
                "--models",
                "mobilenetv2,detector",
                "--frameworks",
                ALL_FRAMEWORKS,
                "--precision",
                "fp32",
            ],
            arm_env,
            results["ssh"],
        ),
        "adb": _start(
            [
                *common,
                "--devices",
                "arm-adb",
                "--models",
                "mobilenetv2",
                "--frameworks",
                FP16_FRAMEWORKS,
                "--precision",
                "fp16",
            ],
            arm_env,
            results["adb"],
        ),
    }
    finished = {lane: _finish(proc) for lane, proc in procs.items()}
    board_ort = emulated_board.board_status().info["onnxruntime"]
    for lane, (code, out, err) in finished.items():
        assert code == 0, f"{lane}: exit {code}\n{out[-3000:]}\n{err[-3000:]}"
        assert "emulated CPU" in err and "one timed inference per cell" in err
        rows = [line for line in out.splitlines() if line.startswith("arm-")]
        assert rows and all("(emulated)" in r and "*" not in r and "≈" not in r for r in rows)
        records = stored_records(results[lane])
        expected = 10 if lane == "ssh" else 4
        assert len(records) == expected, [r["cell_id"] for r in records]
        for record in records:
            where = f"{lane} {record['model']}/{record['framework']}/{record['precision']}"
            assert record["status"] == "ok", f"{where}: {record.get('error')}"
            assert record["device_info"]["machine"] == "aarch64", where
            assert record["emulated"] is True and "cpuinfo" in record["emulation"], where
            assert record["n_samples"] == 1 and record["warmup_samples_ns"] == [], where
            check = record["output_check"]
            assert check["passed"] and "on the host" in check["reference"], where
            if record["framework"] == "onnxruntime":
                assert record["framework_version"] == board_ort, where
    fp16 = stored_records(results["adb"])
    # fp16 on ARM really is fp16 arithmetic: far from fp32 rounding, inside the fp16 rule.
    ncnn = [r for r in fp16 if r["framework"] == "ncnn"]
    assert all(r["output_check"]["rel_error"] > 1e-3 for r in ncnn), ncnn


def test_the_fp16_rule_still_catches_a_corrupted_model_on_arm(
    arm_env, run_cli, tmp_path, shared_models, board_sshd: SshServer, board_work_dir: str
) -> None:
    """A converter that mangled one layer: the ncnn files come from mobilenetv2 with one
    layer's weights perturbed (noise of 20% of their spread), the reference is the intact
    model. On ARM, at fp16 and at fp32, the cell is a mismatch."""
    source = builtin_model_path("mobilenetv2", shared_models)
    broken = tmp_path / "mobilenetv2-one-layer-off.onnx"
    perturb_largest_weight(source, broken, scale=0.2)
    made = run_cli(["convert", str(broken), "--to", "ncnn"])
    assert made.returncode == 0, made.stderr
    (folder, first), *_ = re.findall(r"-> (\S+) \(([^,)]+)", made.stdout)
    lab = _lab(tmp_path, board_lab_entry("arm-ssh", board_work_dir, server=board_sshd))
    results = tmp_path / "results"
    proc = _start(
        [
            *("run", "--lab", str(lab), "--devices", "arm-ssh"),
            *("--models", str(Path(folder) / first), "--reference", str(source)),
            *("--frameworks", "ncnn", "--precision", "fp16,fp32"),
        ],
        arm_env,
        results,
    )
    code, out, err = _finish(proc)
    assert code == 1, f"{out[-2000:]}\n{err[-2000:]}"
    records = {r["precision"]: r for r in stored_records(results)}
    assert set(records) == {"fp16", "fp32"}
    for precision, record in records.items():
        assert record["status"] == "mismatch", f"{precision}: {record['status']}"
        assert record["emulated"] and record["device_info"]["machine"] == "aarch64"
        assert record["output_check"]["ratio"] > 1.5, record["output_check"]
    # At fp16 the norm decides: the damage is spread over every score, as fp16 rounding is.
    assert records["fp16"]["output_check"]["criterion"] in ("rel_l2", "cosine")
