"""llama.cpp inside edgebench-native: its library's recipe (the llama.cpp that llama-cpp-python's
sdist vendors), and the built-in llm-tiny measured through `edgebench run` on a lab device whose
runner is the static binary (this x86 host; the aarch64 build on the emulated phone), its first
step checked against reference-llm, and its greedy tokens the same as the Python runner's
llama.cpp cell on the same model."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from fakes.adb_fixtures import EmulatedPhone
from fakes.generative_cells import tiny_generative_spec
from fakes.llm_models import llm_tiny_gguf  # noqa: F401  # the fixture
from fakes.native_builds import host_native_lab, run_native, with_framework
from fakes.native_generative import (
    PROMPTS,
    assert_checked_like_python,
    phone_native_lab,
    run_records,
    tiny_settings,
)

from edgebench.builds import NATIVE_DIR_ENV, BuildError, native_root
from edgebench.builds.libraries import framework_flags, read_library
from edgebench.builds.native_runner import BuiltRunner, runner_sources
from edgebench.builds.sources import LLAMA_CPP_SDIST, find_source
from edgebench.builds.targets import parse_target
from edgebench.runners.protocol.result_parts import GenerationPart

pytest.importorskip(
    "llama_cpp", reason="needs llama-cpp-python (pip install 'edgebench[llama-cpp]')"
)

SETTINGS = tiny_settings("llama.cpp")


LLAMA_CMAKE = 'cmake_minimum_required(VERSION 3.14)\nproject("llama.cpp" C CXX)\n'


@pytest.fixture(name="native_dir")
def native_dir_fixture(eb_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Path:
    """The native-runner root inside this test's private cache."""
    monkeypatch.delenv(NATIVE_DIR_ENV, raising=False)
    return native_root()


def python_llama_cpp() -> None:
    pytest.importorskip(
        "llama_cpp", reason="needs llama-cpp-python (pip install 'edgebench[llama-cpp]')"
    )


def test_without_the_sdist_the_source_error_names_the_fetch_command(native_dir: Path) -> None:
    with pytest.raises(BuildError) as exc:
        find_source("llama.cpp")
    assert str(exc.value) == (
        f"no llama.cpp source: `edgebench runners fetch-sources` has pip download "
        f"{LLAMA_CPP_SDIST.file_name} (llama-cpp-python {LLAMA_CPP_SDIST.version}, which vendors "
        f"llama.cpp) into {native_dir / 'sources'}/; or pass --source llama.cpp=PATH (a llama.cpp "
        "checkout)"
    )


def test_the_source_is_the_vendored_tree_and_its_version_the_sdists(
    native_dir: Path, tmp_path: Path
) -> None:
    sdist = tmp_path / "llama_cpp_python-0.3.36"
    (sdist / "vendor" / "llama.cpp").mkdir(parents=True)
    (sdist / "PKG-INFO").write_text(
        "Metadata-Version: 2.1\nName: llama_cpp_python\nVersion: 0.3.36\n"
    )
    (sdist / "CMakeLists.txt").write_text("project(llama_cpp)\n")
    (sdist / "vendor" / "llama.cpp" / "CMakeLists.txt").write_text(LLAMA_CMAKE)
    source = find_source("llama.cpp", sdist)
    assert source.root == sdist / "vendor" / "llama.cpp" and source.version == "0.3.36"
    checkout = tmp_path / "llama.cpp"
    checkout.mkdir()
    (checkout / "CMakeLists.txt").write_text(LLAMA_CMAKE)
    assert find_source("llama.cpp", checkout).root == checkout
    (checkout / "CMakeLists.txt").write_text("project(ggml)\n")
    with pytest.raises(BuildError, match=r"has no project\(llama\.cpp\)$"):
        find_source("llama.cpp", checkout)


def test_the_library_is_static_cpu_only_and_never_tuned_to_this_host(
    native_dir: Path, tmp_path: Path
) -> None:
    checkout = tmp_path / "llama.cpp"
    checkout.mkdir()
    (checkout / "CMakeLists.txt").write_text(LLAMA_CMAKE)
    source = find_source("llama.cpp", checkout)
    arm, x86 = parse_target("aarch64-linux"), parse_target("x86_64-linux")
    for target in (arm, x86):
        for features in ("all", "lean"):
            flags = framework_flags(source, target, features)
            assert {
                "-DBUILD_SHARED_LIBS=OFF",
                "-DGGML_NATIVE=OFF",
                "-DLLAMA_BUILD_TOOLS=OFF",
            } <= set(flags)
    assert "-DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod+fp16" in framework_flags(source, arm, "lean")
    assert not any("ARM_ARCH" in flag for flag in framework_flags(source, arm, "all"))
    portable = framework_flags(source, x86, "all")
    assert "-DGGML_AVX2=OFF" in portable and "-DGGML_SSE42=OFF" in portable
    backends = [p.name for p in runner_sources(["llama.cpp"]) if p.parent.name == "backends"]
    assert backends == ["llama_cpp.cpp"]


def test_the_built_runner_links_libllama_and_ggml_with_the_version_macro(
    native_x86_llama: BuiltRunner,
) -> None:
    manifest = json.loads((native_x86_llama.path.parent / "manifest.json").read_text())
    # <root>/bin/<target>/<key>/edgebench-native: the libraries are in <root>/libs.
    folder = native_x86_llama.path.parents[3] / "libs" / manifest["libraries"]["llama.cpp"]
    library = read_library(folder)
    assert library is not None and library.lib.name == "libllama.a"
    assert library.version == native_x86_llama.frameworks["llama.cpp"] == LLAMA_CPP_SDIST.version
    assert f'-DEB_LLAMA_CPP_VERSION="{library.version}"' in manifest["command"]
    assert {p.name for p in library.companions} >= {"libggml.a", "libggml-base.a", "libggml-cpu.a"}
    probe = run_native(native_x86_llama.path, "--probe")
    assert probe["frameworks"]["llama.cpp"]["generative"] is True
    assert probe["frameworks"]["ncnn"]["generative"] is False


@pytest.fixture(scope="session", name="native_x86_llama")
def native_x86_llama_fixture(native_x86: BuiltRunner) -> BuiltRunner:
    return with_framework(native_x86, "llama.cpp")


@pytest.fixture(scope="session", name="native_arm_llama")
def native_arm_llama_fixture(native_arm: BuiltRunner) -> BuiltRunner:
    return with_framework(native_arm, "llama.cpp")


def test_llm_tiny_on_the_host_through_edgebench_native_agrees_with_the_python_runner(
    run_cli,
    eb_env,
    tmp_path: Path,
    native_x86_llama: BuiltRunner,
    llm_tiny_gguf,  # noqa: F811
) -> None:
    python_llama_cpp()
    lab = host_native_lab(tmp_path)
    (native,) = run_records(
        run_cli, eb_env, ["--lab", str(lab), "--devices", "host-native", *SETTINGS]
    )
    assert native["device_info"]["runner"] == "edgebench-native (x86_64-linux)"
    assert native["framework_version"] == native_x86_llama.frameworks["llama.cpp"]
    (python,) = run_records(run_cli, eb_env, SETTINGS)
    assert python["device_info"]["runner"] != native["device_info"]["runner"]
    assert_checked_like_python(native, python, PROMPTS)


def test_the_binary_saves_the_check_material_into_a_new_folder(
    native_x86_llama: BuiltRunner,
    tmp_path: Path,
    llm_tiny_gguf,  # noqa: F811
) -> None:
    saved = tmp_path / "not" / "yet" / "there.npz"
    spec = tiny_generative_spec(llm_tiny_gguf, "llama.cpp", saved)
    result = run_native(native_x86_llama.path, spec)
    assert result["status"] == "ok", result["error"]
    generation = result["generation"]
    # The Python runner's keys, in its order: the host cannot tell which runner wrote it.
    assert list(generation) == [f.name for f in fields(GenerationPart)]
    assert [run["prompt_tokens"] for run in generation["prefill"]] == [8, 32]
    assert all(len(run["ttft_ns"]) == 2 for run in generation["prefill"])
    assert len(result["samples_ns"]) == 2 * (6 - 1) and result["cpu_ns_per_inference"] > 0
    assert result["outputs_file"] == str(saved)
    with np.load(saved) as check:
        assert check["tokens"].dtype == np.int64 and check["logits"].dtype == np.float32
        assert check["tokens"].tolist() == generation["check_tokens"]
        assert len(check["tokens"]) == 4 and check["logits"].ndim == 1
        assert int(np.argmax(check["logits"])) == generation["check_tokens"][0]


def test_a_bad_generation_spec_is_one_line_from_the_binary(
    native_x86_llama: BuiltRunner,
    tmp_path: Path,
    llm_tiny_gguf,  # noqa: F811
) -> None:
    spec = {
        "schema": "edgebench.spec/1",
        "model": str(llm_tiny_gguf),
        "framework": "llama.cpp",
        "generation": {"prompt": [1, 2, 3], "prompt_tokens": [8], "gen_tokens": 2},
    }
    result = run_native(native_x86_llama.path, spec)
    assert result["status"] == "failed" and result["error"]["kind"] == "bad_spec"
    assert result["error"]["message"] == (
        "spec field 'generation.prompt' has 3 tokens; the tests feed up to 16 "
        "(prompt_tokens, context_depth, check_prompt): give a longer prompt"
    )
    hostile = tmp_path / "hostile.gguf"
    data = bytearray(llm_tiny_gguf.read_bytes()[:4096])
    data[16:24] = (2**62).to_bytes(8, "little")  # a metadata count far past the file
    hostile.write_bytes(bytes(data))
    spec["model"] = str(hostile)
    spec["generation"] = {"prompt": list(range(1000, 1032)), "prompt_tokens": [8]}
    result = run_native(native_x86_llama.path, spec)
    assert result["status"] == "failed" and result["error"]["kind"] == "model_load"
    assert str(hostile) in result["error"]["message"] and "\n" not in result["error"]["message"]


def test_llm_tiny_on_the_emulated_phone_without_python_agrees_with_the_python_runner(
    run_cli,
    eb_env,
    tmp_path: Path,
    native_arm_llama: BuiltRunner,
    board_phone: EmulatedPhone,
    board_work_dir: str,
    llm_tiny_gguf,  # noqa: F811
) -> None:
    python_llama_cpp()
    lab = phone_native_lab(tmp_path, board_phone, board_work_dir)
    (native,) = run_records(run_cli, eb_env, ["--lab", str(lab), "--devices", "phone", *SETTINGS])
    assert native["device_info"]["runner"] == "edgebench-native (aarch64-linux)"
    (python,) = run_records(run_cli, eb_env, SETTINGS)
    # An emulated device times one prefill test only, the longest (its timings are never ranked).
    assert_checked_like_python(native, python, PROMPTS[-1:])
