"""A phone without Python gets llama.cpp's generative figures from llama.cpp's own llama-bench:
the real adb server, the emulated phone, the real llama-bench edgebench builds for this host
(the phone's shell runs here) and the built-in llm-tiny, through ``edgebench run`` with
``runner = "framework-tools"``."""

from __future__ import annotations

import shutil
import statistics
from pathlib import Path

import pytest
from fakes.labs import run_tool_cell_on_phone
from fakes.llm_models import (
    llama_bench_or_skip,
    llm_tiny_gguf,  # noqa: F401  # the fixture
)

pytestmark = pytest.mark.load_sensitive

PROMPTS, GEN = (16, 32), 8
CELL_TIMEOUT_S = 240
WORKLOAD = ["--prompt-tokens", ",".join(map(str, PROMPTS)), "--gen-tokens", str(GEN)]
WORKLOAD += ["--rounds", "1", "--cores", "0", "--timeout", str(CELL_TIMEOUT_S)]


@pytest.fixture
def llama_bench_built() -> Path:
    return llama_bench_or_skip()


def run_on_phone(run_cli, emulated_phone, tools_bin: Path, lab: Path) -> tuple[dict, str]:
    args = ["--models", "llm-tiny", "--frameworks", "llama.cpp", *WORKLOAD]
    return run_tool_cell_on_phone(run_cli, emulated_phone, tools_bin, lab, args)


def test_llama_bench_measures_llm_tiny_on_a_phone_without_python(
    run_cli,
    emulated_phone,
    tmp_path,
    llama_bench_built,
    llm_tiny_gguf,  # noqa: F811
):
    tools_bin = tmp_path / "bin"
    tools_bin.mkdir()
    shutil.copy2(llama_bench_built, tools_bin / "llama-bench")
    record, stderr = run_on_phone(run_cli, emulated_phone, tools_bin, tmp_path / "lab.toml")
    assert record["status"] == "ok", (record["error"], stderr[-2000:])
    assert record["device_info"]["runner"] == "framework-tools"
    native = record["native"]
    assert native["tool"] == "llama-bench"
    assert record["framework_version"] == native["tool_version"]
    assert native["tool_version"].startswith("b") and "(" in native["tool_version"]

    generation = record["generation"]
    assert generation["weight_type"] == "f16"  # what the GGUF holds, read from the tool
    # one prefill time per repetition of each asked prompt length, timed by llama-bench
    assert sorted(set(generation["prefill_prompt_tokens"])) == list(PROMPTS)
    assert len(generation["prefill_ms"]) == len(generation["prefill_prompt_tokens"])
    assert all(ms > 0 for ms in generation["prefill_ms"])
    walls = generation["decode_wall_ms"]
    assert generation["gen_tokens"] == GEN and generation["decode_wall_tokens"] == GEN
    assert walls and all(ms > 0 for ms in walls)
    assert record["throughput_ips"] == pytest.approx(GEN * 1000.0 / statistics.median(walls))
    assert record["n_samples"] == GEN * len(walls)
    # no time to first token and no per-token samples: said, not invented
    assert set(generation["unavailable"]) == {"ttft", "per_token_latency"}
    assert generation["ttft_ms"] == [] and record["samples_ns"] == []
    assert set(record["latency_ms"]) == {"mean"} and record["latency_ms"]["mean"] > 0
    assert "no_percentiles" in [w["kind"] for w in record["warning_details"]]


def test_a_phone_without_llama_bench_is_told_how_to_get_it(run_cli, emulated_phone, tmp_path):
    from edgebench.builds.llama_bench import BUILD_COMMAND

    empty = tmp_path / "bin"
    empty.mkdir()
    record, _ = run_on_phone(run_cli, emulated_phone, empty, tmp_path / "lab.toml")
    assert record["status"] == "skipped" and record["error_kind"] == "not_installed"
    assert f"llama-bench not found in {empty}" in record["error"]
    assert BUILD_COMMAND in record["error"] and "\n" not in record["error"]
