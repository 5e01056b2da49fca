"""llama-bench's build (edgebench/builds/llama_bench.py) without building: what is missing is one
line naming the fix, and the cached binary is found by the key of the sdist's bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgebench.builds import NATIVE_DIR_ENV, BuildError, native_root
from edgebench.builds.llama_bench import build_llama_bench, built_llama_bench, planned_build
from edgebench.builds.sources import LLAMA_CPP_SDIST, sources_dir

GXX = "#!/bin/sh\necho 'g++ (Debian 12.2.0-14) 12.2.0'\n"


@pytest.fixture(autouse=True)
def native_dir(eb_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Path:
    """The native-runner root inside this test's private cache."""
    monkeypatch.delenv(NATIVE_DIR_ENV, raising=False)
    return native_root()


def tools(folder: Path, monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """A PATH holding only ``names``, each a script printing a g++ version."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text(GXX)
        (folder / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.setattr("platform.machine", lambda: "x86_64")


def sdist(content: bytes) -> Path:
    path = sources_dir() / LLAMA_CPP_SDIST.file_name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def test_without_the_sdist_it_names_the_fetch_command(tmp_path, monkeypatch):
    tools(tmp_path / "bin", monkeypatch, "cmake", "gcc", "g++")
    for call in (build_llama_bench, built_llama_bench):
        with pytest.raises(BuildError) as exc:
            call()
        assert str(exc.value) == (
            f"cannot build llama-bench: no {LLAMA_CPP_SDIST.file_name} in {sources_dir()}/ "
            "(`edgebench runners fetch-sources` has pip download it)"
        )


def test_without_cmake_or_a_compiler_it_says_which(tmp_path, monkeypatch):
    sdist(b"not read before the tools are found")
    tools(tmp_path / "no-cmake", monkeypatch, "gcc", "g++")
    with pytest.raises(BuildError, match=r"^cannot build llama-bench: cmake is not installed "):
        build_llama_bench()
    tools(tmp_path / "no-gcc", monkeypatch, "cmake")
    with pytest.raises(BuildError, match=r"^no x86_64 compiler: install g\+\+"):
        build_llama_bench()


def test_a_built_binary_is_found_by_the_key_of_the_sdist_bytes(tmp_path, monkeypatch):
    tools(tmp_path / "bin", monkeypatch, "cmake", "gcc", "g++")
    sdist(b"one source")
    first = planned_build()
    assert built_llama_bench() is None
    first.folder.mkdir(parents=True)
    first.binary.write_bytes(b"a built llama-bench")
    assert built_llama_bench() == first.binary
    assert build_llama_bench() == first.binary  # built already: nothing runs
    assert "-DGGML_NATIVE=ON" in first.options and "-DLLAMA_BUILD_TOOLS=ON" in first.options
    sdist(b"another source")
    assert planned_build().folder != first.folder
    assert built_llama_bench() is None
