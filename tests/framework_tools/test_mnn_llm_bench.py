"""A device without Python gets MNN-LLM's generative figures from MNN's own llm_bench: the tool
edgebench compiles against the libMNN.a (with its LLM engine) this host's edgebench-native links,
run on the built-in llm-tiny (f16) through `edgebench run` with ``runner = "framework-tools"``
on the emulated phone (its shell runs here), and its decode rate set beside edgebench's own
mnn-llm cell on the same folder through that edgebench-native (one library, so the two rates
are near, but this is not a timing assertion: the factor is loose)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fakes.labs import run_tool_cell_on_phone
from fakes.llm_models import llm_tiny_gguf  # noqa: F401  # the fixture
from fakes.native_builds import host_native_lab
from fakes.native_generative import run_records

from edgebench.builds.llm_bench import BUILD_COMMAND, build_llm_bench, mnn_llm_library
from edgebench.builds.native_runner import BuiltRunner
from edgebench.builds.targets import parse_target
from edgebench.framework_tools.mnn_llm_bench import NO_PER_TOKEN, NO_REPETITIONS, NO_TTFT

pytestmark = pytest.mark.load_sensitive

PROMPTS, GEN = (16, 32), 8
CELL_TIMEOUT_S = 240
WORKLOAD = ["--prompt-tokens", ",".join(map(str, PROMPTS)), "--gen-tokens", str(GEN)]
WORKLOAD += ["--rounds", "1", "--threads", "1", "--cores", "0", "--timeout", str(CELL_TIMEOUT_S)]
#: How far apart the tool's decode rate and edgebench's may be: the same library, but each
#: times a different span of a token (the tool leaves the sampling out) on a shared machine.
LOOSE_FACTOR = 3.0


@pytest.fixture(scope="module", name="llm_bench_x86")
def llm_bench_x86_fixture(native_x86_mnn: BuiltRunner) -> Path:
    """llm_bench compiled against the library the x86_64 edgebench-native links (a minute, once
    per library)."""
    target = parse_target("x86_64-linux")
    library = mnn_llm_library(target)
    binary = build_llm_bench(target, library)
    assert binary.parent.name.startswith("llm_bench-") and binary.stat().st_size > 0
    return binary


def run_on_phone(
    run_cli, emulated_phone, tools_bin: Path, lab: Path, *more: str
) -> tuple[dict, str]:
    args = ["--models", "llm-tiny", "--frameworks", "mnn-llm", *WORKLOAD, *more]
    return run_tool_cell_on_phone(run_cli, emulated_phone, tools_bin, lab, args)


def test_llm_bench_measures_llm_tiny_like_edgebench_s_own_mnn_llm_cell(
    run_cli,
    eb_env,
    emulated_phone,
    tmp_path,
    llm_bench_x86,
    native_x86_mnn: BuiltRunner,
    llm_tiny_gguf,  # noqa: F811
):
    pytest.importorskip("MNN.llm", reason="the MNN-LLM converter needs the mnn package")
    tools_bin = tmp_path / "bin"
    tools_bin.mkdir()
    shutil.copy2(llm_bench_x86, tools_bin / "llm_bench")
    record, stderr = run_on_phone(run_cli, emulated_phone, tools_bin, tmp_path / "lab.toml")
    assert record["status"] == "ok", (record["error"], stderr[-2000:])
    assert record["device_info"]["runner"] == "framework-tools"
    native = record["native"]
    assert native["tool"] == "llm_bench" and native["tool_version"] is None
    # one table row per test the cell asked for, as llm_bench printed it (test, mean ± std)
    rows = [[cell.strip() for cell in line.split("|")[-3:-1]] for line in native["raw_lines"]]
    assert [test for test, _ in rows] == ["pp16", "pp32", "tg8"]
    assert all(" ± " in rate for _, rate in rows)

    generation = record["generation"]
    assert generation["weight_type"] == "f16"  # the folder's, read on the host
    assert generation["prefill_prompt_tokens"] == list(PROMPTS)
    assert all(ms > 0 for ms in generation["prefill_ms"])
    assert generation["gen_tokens"] == GEN and generation["decode_wall_tokens"] == GEN
    (wall,) = generation["decode_wall_ms"]
    tool_rate = GEN * 1000.0 / wall
    assert tool_rate > 0 and record["throughput_ips"] == pytest.approx(tool_rate)
    assert record["n_samples"] == 3 * GEN  # the cell's three repetitions of tg8
    assert generation["unavailable"] == {
        "ttft": NO_TTFT,
        "per_token_latency": NO_PER_TOKEN,
        "repetition_times": NO_REPETITIONS,
    }
    assert generation["ttft_ms"] == [] and record["samples_ns"] == []
    assert set(record["latency_ms"]) == {"mean"}
    assert record["latency_ms"]["mean"] == pytest.approx(1000.0 / tool_rate)

    # edgebench's own mnn-llm cell on the same model, workload and core, in the same library
    (tmp_path / "native").mkdir()
    lab = host_native_lab(tmp_path / "native")
    args = ["--models", "llm-tiny", "--frameworks", "mnn-llm", *WORKLOAD]
    (own,) = run_records(run_cli, eb_env, ["--lab", str(lab), "--devices", "host-native", *args])
    assert own["status"] == "ok", own.get("error")
    own_walls = own["generation"]["decode_wall_ms"]
    own_rate = (GEN - 1) * 1000.0 / sorted(own_walls)[len(own_walls) // 2]
    ratio = tool_rate / own_rate
    print(f"decode tok/s: llm_bench {tool_rate:.1f}, edgebench-native {own_rate:.1f}, {ratio:.2f}")
    assert 1 / LOOSE_FACTOR < ratio < LOOSE_FACTOR, (tool_rate, own_rate)


def test_a_phone_without_llm_bench_is_told_how_to_get_it(run_cli, emulated_phone, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    record, _ = run_on_phone(run_cli, emulated_phone, empty, tmp_path / "lab.toml")
    assert record["status"] == "skipped" and record["error_kind"] == "not_installed"
    assert f"llm_bench not found in {empty}" in record["error"]
    assert BUILD_COMMAND in record["error"] and "\n" not in record["error"]


def test_a_context_depth_is_refused_in_one_line(run_cli, emulated_phone, tmp_path, llm_bench_x86):
    tools_bin = tmp_path / "bin"
    tools_bin.mkdir()
    shutil.copy2(llm_bench_x86, tools_bin / "llm_bench")
    lab = tmp_path / "lab.toml"
    record, _ = run_on_phone(run_cli, emulated_phone, tools_bin, lab, "--context-depth", "16")
    assert record["status"] == "unsupported"
    assert record["error"].startswith("llm_bench has no context depth")
    assert "\n" not in record["error"]


@pytest.fixture(scope="module", name="llm_bench_arm")
def llm_bench_arm_fixture(native_arm_mnn: BuiltRunner) -> Path:
    """llm_bench compiled against the aarch64 edgebench-native's library: a static binary."""
    target = parse_target("aarch64-linux")
    return build_llm_bench(target, mnn_llm_library(target))


def test_the_aarch64_tool_measures_llm_tiny_on_the_emulated_phone(
    run_cli,
    emulated_phone,
    tmp_path,
    llm_bench_arm,
    llm_tiny_gguf,  # noqa: F811
):
    """The binary a phone would run: the emulated phone's shell runs it here through the
    kernel's qemu-aarch64 handler (seconds for this workload)."""
    if not Path("/proc/sys/fs/binfmt_misc/qemu-aarch64").exists():
        pytest.skip("no qemu-aarch64 binfmt handler here: apt-get install qemu-user-static")
    pytest.importorskip("MNN.llm", reason="the MNN-LLM converter needs the mnn package")
    tools_bin = tmp_path / "bin"
    tools_bin.mkdir()
    shutil.copy2(llm_bench_arm, tools_bin / "llm_bench")
    args = ["--models", "llm-tiny", "--frameworks", "mnn-llm", "--prompt-tokens", "8"]
    args += ["--gen-tokens", "4", "--rounds", "1", "--threads", "1", "--timeout", "300"]
    record, stderr = run_tool_cell_on_phone(
        run_cli, emulated_phone, tools_bin, tmp_path / "lab.toml", args
    )
    assert record["status"] == "ok", (record["error"], stderr[-2000:])
    generation = record["generation"]
    assert generation["weight_type"] == "f16" and generation["prefill_prompt_tokens"] == [8]
    assert generation["prefill_ms"][0] > 0 and generation["decode_wall_ms"][0] > 0
    assert record["throughput_ips"] > 0 and generation["decode_wall_tokens"] == 4
