"""MNN-LLM inside edgebench-native: MNN's one static library with its LLM engine compiled in
(the runner links it once for mnn and mnn-llm), and the built-in llm-tiny, converted to an
MNN-LLM folder, measured through `edgebench run` on a lab device whose runner is the static
binary (this x86 host; the aarch64 build on the emulated phone), its first step checked against
reference-llm, and its greedy tokens the same as the Python runner's mnn-llm cell on the same
folder; on this host also at q8_0 (MNN's 8-bit blocks) and q4_0 (the file's own 4-bit blocks),
the binary's first-step logits the Python runner's."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from fakes.adb_fixtures import EmulatedPhone
from fakes.generative_cells import PROMPT, tiny_generative_spec
from fakes.llm_models import llm_tiny_gguf, llm_tiny_q4_0, llm_tiny_q8_0  # noqa: F401  # fixtures
from fakes.native_builds import host_native_lab, run_native, source_problem, with_framework
from fakes.native_generative import (
    PROMPTS,
    assert_checked_like_python,
    phone_native_lab,
    run_records,
    tiny_settings,
)

from edgebench.agreement import cosine
from edgebench.builds.libraries import framework_flags, read_library
from edgebench.builds.native_runner import BuiltRunner, runner_sources
from edgebench.builds.sources import find_source
from edgebench.builds.targets import parse_target
from edgebench.converters import ArtifactCache, ConversionOptions, get_converter
from edgebench.frameworks.mnn.build import LLM_FLAGS
from edgebench.runners.protocol.result_parts import GenerationPart

MNN_WHEEL = "needs the mnn package (pip install 'edgebench[mnn]')"
SETTINGS = tiny_settings("mnn-llm")
#: The quantized weight types -> what MNN-LLM runs (the folder's edgebench_weights.json).
QUANTIZED = {"q8_0": "mnn-int8-block32", "q4_0": "q4_0"}


def python_mnn_llm() -> None:
    """The Python runner's mnn-llm cell and the converter both need the mnn wheel."""
    pytest.importorskip("MNN.llm", reason=MNN_WHEEL)


def test_mnn_llm_is_mnn_s_library_with_its_own_backend_file() -> None:
    backends = [p.name for p in runner_sources(["mnn", "mnn-llm"]) if p.parent.name == "backends"]
    assert backends == ["mnn.cpp", "mnn_gpu.cpp", "mnn_llm.cpp"]
    alone = [p.name for p in runner_sources(["mnn"]) if p.parent.name == "backends"]
    assert alone == ["mnn.cpp", "mnn_gpu.cpp"]
    problem = source_problem("mnn")
    if problem is not None:
        pytest.skip(f"no MNN source for edgebench-native: {problem}")
    source = find_source("mnn-llm")
    assert source.framework == "mnn" and source == find_source("mnn")
    for target in ("x86_64-linux", "aarch64-linux"):
        assert set(LLM_FLAGS) <= set(framework_flags(source, parse_target(target), "lean"))


@pytest.fixture(scope="session", name="native_x86_mnn_llm")
def native_x86_mnn_llm_fixture(native_x86: BuiltRunner) -> BuiltRunner:
    with_framework(native_x86, "mnn")
    return with_framework(native_x86, "mnn-llm")


@pytest.fixture(scope="session", name="native_arm_mnn_llm")
def native_arm_mnn_llm_fixture(native_arm: BuiltRunner) -> BuiltRunner:
    with_framework(native_arm, "mnn")
    return with_framework(native_arm, "mnn-llm")


@pytest.fixture(scope="session", name="llm_tiny_mnn_llm")
def llm_tiny_mnn_llm_fixture(
    tmp_path_factory: pytest.TempPathFactory,
    llm_tiny_gguf: Path,  # noqa: F811
) -> Path:
    """llm-tiny (f16) converted by edgebench's converter: the folder's llm.mnn."""
    python_mnn_llm()
    cache = ArtifactCache(tmp_path_factory.mktemp("mnn-llm") / "artifacts")
    converter, options = get_converter("mnn-llm"), ConversionOptions("f16")
    artifact = cache.convert(converter, llm_tiny_gguf, "llm-tiny", options)
    return Path(artifact.path) / "llm.mnn"


def llm_tiny_folder(cache: Path, gguf: Path, weight_type: str) -> Path:
    """llm-tiny at ``weight_type`` converted by edgebench's converter: the folder's llm.mnn."""
    python_mnn_llm()
    converter, options = get_converter("mnn-llm"), ConversionOptions(weight_type)
    artifact = ArtifactCache(cache).convert(converter, gguf, f"llm-tiny-{weight_type}", options)
    return Path(artifact.path) / "llm.mnn"


def test_the_built_runner_links_libmnn_once_for_mnn_and_mnn_llm(
    native_x86_mnn_llm: BuiltRunner,
) -> None:
    manifest = json.loads((native_x86_mnn_llm.path.parent / "manifest.json").read_text())
    assert manifest["libraries"]["mnn-llm"] == manifest["libraries"]["mnn"]
    # <root>/bin/<target>/<key>/edgebench-native: the libraries are in <root>/libs.
    libs = native_x86_mnn_llm.path.parents[3] / "libs"
    library = read_library(libs / manifest["libraries"]["mnn"])
    assert library is not None and library.lib.name == "libMNN.a"
    assert (library.include_dir / "llm" / "llm.hpp").is_file()
    assert manifest["command"].count(str(library.lib)) == 1
    assert native_x86_mnn_llm.frameworks["mnn-llm"] == native_x86_mnn_llm.frameworks["mnn"]
    probe = run_native(native_x86_mnn_llm.path, "--probe")
    assert probe["frameworks"]["mnn-llm"]["generative"] is True
    assert probe["frameworks"]["mnn"]["generative"] is False


def test_the_binary_measures_the_folder_and_saves_its_check(
    native_x86_mnn_llm: BuiltRunner,
    llm_tiny_mnn_llm: Path,
    tmp_path: Path,
) -> None:
    saved = tmp_path / "not" / "yet" / "there.npz"
    spec = tiny_generative_spec(llm_tiny_mnn_llm, "mnn-llm", saved)
    result = run_native(native_x86_mnn_llm.path, spec)
    assert result["status"] == "ok", result["error"]
    generation = result["generation"]
    # The Python runner's keys, in its order: the host cannot tell which runner wrote it.
    assert list(generation) == [f.name for f in fields(GenerationPart)]
    assert generation["weight_type"] == "f16" and generation["kv_cache_bytes"] is None
    assert [run["prompt_tokens"] for run in generation["prefill"]] == [8, 32]
    assert all(len(run["ttft_ns"]) == 2 for run in generation["prefill"])
    assert len(result["samples_ns"]) == 2 * (6 - 1) and result["cpu_ns_per_inference"] > 0
    assert result["peak_rss_kb"] > result["rss_before_load_kb"] > 0
    with np.load(saved) as check:
        assert check["tokens"].tolist() == generation["check_tokens"]
        assert len(check["tokens"]) == 4 and check["logits"].ndim == 1
        assert int(np.argmax(check["logits"])) == generation["check_tokens"][0]


@pytest.mark.parametrize("weight_type", sorted(QUANTIZED))
def test_a_quantized_folder_s_check_from_the_binary_is_the_python_runner_s(
    native_x86_mnn_llm: BuiltRunner,
    llm_tiny_q8_0: Path,  # noqa: F811
    llm_tiny_q4_0: Path,  # noqa: F811
    tmp_path: Path,
    weight_type: str,
) -> None:
    """The same folder, the same MNN release: the binary's first-step logits and greedy check
    tokens are the Python runner's (mnn wheel) on the same prompt."""
    from edgebench.runners.backends.mnn_llm_backend import MnnLlmBackend

    gguf = {"q8_0": llm_tiny_q8_0, "q4_0": llm_tiny_q4_0}[weight_type]
    model = llm_tiny_folder(tmp_path / "artifacts", gguf, weight_type)
    saved = tmp_path / "native.npz"
    spec = tiny_generative_spec(model, "mnn-llm", saved)
    result = run_native(native_x86_mnn_llm.path, spec)
    assert result["status"] == "ok", result["error"]
    assert result["generation"]["weight_type"] == QUANTIZED[weight_type]
    generation = spec["generation"]
    assert isinstance(generation, dict)
    prompt = PROMPT[: generation["check_prompt"]]
    python = MnnLlmBackend()
    python.load(str(model.parent), threads=1, context_tokens=64)
    expected = np.asarray(python.first_logits(prompt), dtype=np.float32)
    tokens: list[int] = []
    python.generate(prompt, 4, tokens.append)
    assert python.weight_type() == QUANTIZED[weight_type]
    with np.load(saved) as check:
        assert check["tokens"].tolist() == tokens == result["generation"]["check_tokens"]
        assert cosine(check["logits"], expected) > 0.9999
        assert int(np.argmax(check["logits"])) == int(np.argmax(expected))


def test_a_folder_without_its_weights_is_one_line_from_the_binary(
    native_x86_mnn_llm: BuiltRunner,
    llm_tiny_mnn_llm: Path,
    tmp_path: Path,
) -> None:
    folder = tmp_path / "partial"
    folder.mkdir()
    for name in ("llm.mnn", "config.json", "llm_config.json"):
        (folder / name).write_bytes((llm_tiny_mnn_llm.parent / name).read_bytes())
    spec = tiny_generative_spec(folder / "llm.mnn", "mnn-llm", tmp_path / "out.npz")
    result = run_native(native_x86_mnn_llm.path, spec)
    assert result["status"] == "failed" and result["error"]["kind"] == "model_load"
    assert result["error"]["message"] == (
        f"mnn-llm needs an MNN-LLM model folder; {folder} has no llm.mnn.weight "
        "(convert the GGUF with edgebench)"
    )


def test_llm_tiny_on_the_host_through_edgebench_native_agrees_with_the_python_runner(
    run_cli,
    eb_env,
    tmp_path: Path,
    native_x86_mnn_llm: BuiltRunner,
    llm_tiny_gguf,  # noqa: F811
) -> None:
    python_mnn_llm()
    lab = host_native_lab(tmp_path)
    (native,) = run_records(
        run_cli, eb_env, ["--lab", str(lab), "--devices", "host-native", *SETTINGS]
    )
    assert native["device_info"]["runner"] == "edgebench-native (x86_64-linux)"
    assert native["framework_version"] == native_x86_mnn_llm.frameworks["mnn-llm"]
    (python,) = run_records(run_cli, eb_env, SETTINGS)
    assert python["device_info"]["runner"] != native["device_info"]["runner"]
    assert native["framework_version"] == python["framework_version"]
    assert_checked_like_python(native, python, PROMPTS)


def test_quantized_llm_tiny_through_edgebench_native_is_checked_like_the_python_runner(
    run_cli,
    eb_env,
    tmp_path: Path,
    native_x86_mnn_llm: BuiltRunner,
    llm_tiny_q8_0,  # noqa: F811
    llm_tiny_q4_0,  # noqa: F811
) -> None:
    """`edgebench run --weights q8_0,q4_0` on the host's edgebench-native and on the Python
    runner: every cell ok, its check against reference-llm passed, the weight type that ran
    recorded alike and the greedy check tokens the same."""
    python_mnn_llm()
    settings = [*SETTINGS, "--weights", ",".join(sorted(QUANTIZED))]
    lab = host_native_lab(tmp_path)
    natives = run_records(
        run_cli, eb_env, ["--lab", str(lab), "--devices", "host-native", *settings]
    )
    pythons = {r["precision"]: r for r in run_records(run_cli, eb_env, settings)}
    assert sorted(r["precision"] for r in natives) == sorted(QUANTIZED)
    for native in natives:
        python = pythons[native["precision"]]
        assert native["device_info"]["runner"] == "edgebench-native (x86_64-linux)"
        for record in (native, python):
            assert record["status"] == "ok", record.get("error")
            assert record["output_check"]["passed"], record["output_check"]
            assert record["output_check"]["outputs"][0]["cosine"] > 0.99
            assert record["generation"]["weight_type"] == QUANTIZED[native["precision"]]
        assert native["generation"]["check_tokens"] == python["generation"]["check_tokens"]
        assert native["generation"]["check_tokens"]


def test_llm_tiny_on_the_emulated_phone_without_python_agrees_with_the_python_runner(
    run_cli,
    eb_env,
    tmp_path: Path,
    native_arm_mnn_llm: BuiltRunner,
    board_phone: EmulatedPhone,
    board_work_dir: str,
    llm_tiny_gguf,  # noqa: F811
) -> None:
    python_mnn_llm()
    lab = phone_native_lab(tmp_path, board_phone, board_work_dir)
    (native,) = run_records(run_cli, eb_env, ["--lab", str(lab), "--devices", "phone", *SETTINGS])
    assert native["device_info"]["runner"] == "edgebench-native (aarch64-linux)"
    (python,) = run_records(run_cli, eb_env, SETTINGS)
    # An emulated device times one prefill test only, the longest (its timings are never ranked).
    assert_checked_like_python(native, python, PROMPTS[-1:])
