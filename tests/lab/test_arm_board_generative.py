"""Generative cells on the emulated arm64 board over the real sshd: the built-in llm-tiny
measured by the board's own Python (MNN-LLM from the MNN wheel, ONNX Runtime GenAI from its
own; OpenVINO GenAI refused in one line, as it cannot run under qemu) and by the aarch64
edgebench-native binary (llama.cpp and MNN-LLM, no Python needed), each record's first-step
logits checked against reference-llm on this host and its greedy check tokens the same as this
host's own run of the same runtime.

Skipped, with what is missing and the line that fixes it, only where this machine cannot
emulate aarch64 (fakes/arm_board.py) or has no source for a native framework
(fakes/native_builds.py). Under qemu a token takes about 100 to 300 ms, so the
workload is small: 4 generated tokens, one round, one thread (an emulated device prefills the
output check's prompt only).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.arm_board import board_lab_entry
from fakes.llm_models import llm_tiny_gguf  # noqa: F401  # the fixture
from fakes.native_builds import host_native_lab, with_framework
from fakes.native_generative import NATIVE_RUNNER, run_records
from fakes.ssh_fixtures import SshServer

from edgebench.builds.native_runner import BuiltRunner
from edgebench.lab.emulation_limits import unsupported_under_emulation
from edgebench.lab.facts import DeviceFacts
from edgebench.planning.generative_workload import CHECK_PROMPT_TOKENS

PROMPT, GEN = 8, 4
SETTINGS = [
    *("--models", "llm-tiny", "--prompt-tokens", str(PROMPT), "--gen-tokens", str(GEN)),
    *("--rounds", "1", "--threads", "1"),
]
#: What the board's Python runs: each has an aarch64 wheel on the board.
BOARD_PYTHON_FRAMEWORKS = ("mnn-llm", "onnxruntime-genai")
#: Refused on an emulated aarch64 device before anything is sent (lab/emulation_limits.py).
UNDER_QEMU = "openvino-genai"
#: What the board's aarch64 edgebench-native runs (llama-cpp-python has no aarch64 wheel).
NATIVE_FRAMEWORKS = ("llama.cpp", "mnn-llm")


def _board_lab(folder: Path, server: SshServer, work_dir: str, *extra: str) -> Path:
    lab = folder / "lab.toml"
    lab.write_text(board_lab_entry("arm-ssh", work_dir, server=server, extra=list(extra)))
    return lab


def _frameworks(names: tuple[str, ...]) -> list[str]:
    return ["--frameworks", ",".join(names)]


def _by_framework(records: list[dict]) -> dict[str, dict]:
    return {r["framework"]: r for r in records}


def _assert_ran_on_the_board_like_the_host(board: dict, host: dict) -> None:
    """ok on aarch64 (emulated), logits checked on this host, figures there, and the same
    greedy check tokens as the host's run of the same runtime."""
    where = f"{board['framework']} ({board['device_info'].get('runner')})"
    assert board["status"] == "ok", f"{where}: {board.get('error')}"
    assert board["device_info"]["machine"] == "aarch64", where
    assert board["emulated"] is True, where
    check = board["output_check"]
    assert check["passed"] and check["reference"].startswith("reference-llm"), (where, check)
    assert check["outputs"][0]["name"] == "logits", (where, check)
    generation = board["generation"]
    assert generation["weight_type"] == host["generation"]["weight_type"], where
    # An emulated device times one prefill, of the output check's prompt (correctness only).
    assert set(generation["ttft_prompt_tokens"]) == {CHECK_PROMPT_TOKENS}, where
    assert generation["ttft_ms"] and all(t > 0 for t in generation["ttft_ms"]), where
    walls = generation["decode_wall_ms"]
    assert walls and all(w > 0 for w in walls), where
    assert board["n_samples"] == len(walls) * (GEN - 1), where
    assert board["throughput_ips"] > 0, where  # decode tokens per second
    assert host["status"] == "ok", host.get("error")
    assert generation["check_tokens"], where
    assert generation["check_tokens"] == host["generation"]["check_tokens"], where


def test_openvino_genai_is_refused_on_an_emulated_aarch64_device_only() -> None:
    """Installed or not: its refusal comes from the facts alone, before anything is sent."""
    installed = {UNDER_QEMU: {"available": True}}
    board = DeviceFacts(machine="aarch64", emulated=True, frameworks=installed)
    reason = unsupported_under_emulation(board, UNDER_QEMU)
    assert reason is not None and "MIDR_EL1" in reason and "\n" not in reason
    assert unsupported_under_emulation(board, "mnn-llm") is None
    phone = DeviceFacts(machine="aarch64", emulated=False, frameworks=installed)
    assert unsupported_under_emulation(phone, UNDER_QEMU) is None


def test_llm_tiny_on_the_board_s_python_over_ssh_agrees_with_the_host(
    run_cli,
    eb_env,
    tmp_path: Path,
    board_sshd: SshServer,
    board_work_dir: str,
    llm_tiny_gguf,  # noqa: F811
) -> None:
    for module in ("MNN.llm", "onnxruntime_genai"):  # the host's runs, and the converters
        pytest.importorskip(module, reason="needs edgebench[mnn,onnxruntime-genai] on the host")
    lab = _board_lab(tmp_path, board_sshd, board_work_dir)
    on_board = (*BOARD_PYTHON_FRAMEWORKS, UNDER_QEMU)
    board = _by_framework(
        run_records(
            run_cli,
            eb_env,
            ["--lab", str(lab), "--devices", "arm-ssh", *_frameworks(on_board), *SETTINGS],
        )
    )
    host = _by_framework(
        run_records(run_cli, eb_env, [*_frameworks(BOARD_PYTHON_FRAMEWORKS), *SETTINGS])
    )
    for framework in BOARD_PYTHON_FRAMEWORKS:
        assert board[framework]["device_info"]["runner"] == "python", framework
        _assert_ran_on_the_board_like_the_host(board[framework], host[framework])
    refused = board[UNDER_QEMU]
    assert (refused["status"], refused["error_kind"]) == ("unsupported", "unsupported")
    reason = refused["error"]
    assert reason.startswith(f"{UNDER_QEMU} on arm-ssh: ") and "\n" not in reason, reason
    assert "emulator" in reason and "real ARM device" in reason, reason


def test_llm_tiny_on_the_board_s_edgebench_native_over_ssh_agrees_with_the_host(
    run_cli,
    eb_env,
    tmp_path: Path,
    native_x86: BuiltRunner,
    native_arm: BuiltRunner,
    board_sshd: SshServer,
    board_work_dir: str,
    llm_tiny_gguf,  # noqa: F811
) -> None:
    pytest.importorskip("MNN.llm", reason="the MNN-LLM converter needs edgebench[mnn] on the host")
    for framework in NATIVE_FRAMEWORKS:
        with_framework(native_x86, framework)
        with_framework(native_arm, framework)
    lab = _board_lab(tmp_path, board_sshd, board_work_dir, NATIVE_RUNNER)
    args = [*_frameworks(NATIVE_FRAMEWORKS), *SETTINGS]
    board = _by_framework(
        run_records(run_cli, eb_env, ["--lab", str(lab), "--devices", "arm-ssh", *args])
    )
    (tmp_path / "host").mkdir()
    host_lab = host_native_lab(tmp_path / "host")
    host = _by_framework(
        run_records(run_cli, eb_env, ["--lab", str(host_lab), "--devices", "host-native", *args])
    )
    for framework in NATIVE_FRAMEWORKS:
        assert board[framework]["device_info"]["runner"] == "edgebench-native (aarch64-linux)"
        _assert_ran_on_the_board_like_the_host(board[framework], host[framework])
