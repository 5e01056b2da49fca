"""What the edgebench-native generative tests share (llama.cpp, MNN-LLM): llm-tiny run through
`edgebench run` on a lab device whose runner is the static binary, and the checks that its
record is the Python runner's in all but the timings."""

from __future__ import annotations

import json
from pathlib import Path

from fakes.adb_fixtures import EmulatedPhone
from fakes.arm_board import BOARD_PYTHON, board_lab_entry

PROMPTS, GEN = (8, 16), 6
NATIVE_RUNNER = 'runner = "edgebench-native"'


def tiny_settings(framework: str) -> list[str]:
    """`edgebench run`'s arguments for a short llm-tiny cell on ``framework``."""
    return [
        *("--models", "llm-tiny", "--frameworks", framework),
        *("--prompt-tokens", ",".join(map(str, PROMPTS)), "--gen-tokens", str(GEN)),
        *("--rounds", "1", "--threads", "1"),
    ]


def phone_native_lab(folder: Path, phone: EmulatedPhone, work_dir: str) -> Path:
    """A lab file whose ``phone`` runs edgebench-native: its Python is a path that is not there."""
    entry = board_lab_entry("phone", work_dir, phone=phone, extra=[NATIVE_RUNNER])
    lab = folder / "lab.toml"
    lab.write_text(entry.replace(f'python = "{BOARD_PYTHON}"', 'python = "/system/bin/python3"'))
    return lab


def run_records(run_cli, eb_env, args: list[str]) -> list[dict]:
    """`edgebench run` with ``args``; the records of that run (the newest run folder)."""
    done = run_cli(["run", *args], timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = sorted(Path(eb_env["EDGEBENCH_RESULTS"]).iterdir(), key=lambda p: p.stat().st_mtime)
    lines = (runs[-1] / "records.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def assert_checked_like_python(native: dict, python: dict, prompts: tuple[int, ...]) -> None:
    """Both ok at f16, the native record's output check passed, its tests the ones asked, its
    generation part the Python runner's keys and its greedy check tokens the same."""
    assert native["status"] == "ok", native.get("error")
    assert native["output_check"]["passed"], native["output_check"]
    generation = native["generation"]
    assert sorted(set(generation["ttft_prompt_tokens"])) == list(prompts)
    assert native["n_samples"] == len(generation["decode_wall_ms"]) * (GEN - 1)
    assert python["status"] == "ok", python.get("error")
    assert generation["weight_type"] == python["generation"]["weight_type"] == "f16"
    assert list(generation) == list(python["generation"])
    assert generation["check_tokens"], generation
    assert generation["check_tokens"] == python["generation"]["check_tokens"]
