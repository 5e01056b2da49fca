"""Each framework's recipe lists the native runner's backend files it compiles (runner_backend):
every list names files that are there, and every backend .cpp is exactly one framework's, so
no file is compiled twice into one runner or left out of every runner."""

from __future__ import annotations

from collections import Counter

import pytest

from edgebench.builds import BuildError
from edgebench.builds.native_runner import runner_dir, runner_sources
from edgebench.builds.recipe import library_recipes

BACKENDS = runner_dir() / "backends"


@pytest.mark.parametrize("framework", sorted(library_recipes()))
def test_a_recipe_s_backend_files_are_there(framework: str) -> None:
    files = library_recipes()[framework].runner_backend
    assert files, f"{framework}'s recipe lists no backend file"
    for name in files:
        assert (BACKENDS / name).is_file(), f"{framework}: {BACKENDS / name} is missing"
    backends = [p for p in runner_sources([framework]) if p.parent == BACKENDS]
    assert [p.name for p in backends] == list(files)


def test_every_backend_source_is_one_recipe_s() -> None:
    owners = Counter(
        name for recipe in library_recipes().values() for name in recipe.runner_backend
    )
    on_disk = {path.name for path in BACKENDS.glob("*.cpp")}
    assert set(owners) == on_disk, "backend files no recipe lists, or listed ones not there"
    assert [name for name, count in owners.items() if count > 1] == []


def test_mnn_s_parts_are_not_mnn_llm_s() -> None:
    """mnn_llm.cpp begins as mnn's parts do (mnn_gpu.cpp); only the lists tell them apart."""
    mnn = [p.name for p in runner_sources(["mnn"]) if p.parent == BACKENDS]
    both = [p.name for p in runner_sources(["mnn", "mnn-llm"]) if p.parent == BACKENDS]
    assert mnn == ["mnn.cpp", "mnn_gpu.cpp"]
    assert both == ["mnn.cpp", "mnn_gpu.cpp", "mnn_llm.cpp"]


def test_a_missing_backend_file_is_named(tmp_path) -> None:
    folder = tmp_path / "native_runner"
    (folder / "backends").mkdir(parents=True)
    (folder / "main.cpp").write_text("int main() { return 0; }\n")
    (folder / "backends" / "mnn.cpp").write_text("// mnn\n")
    with pytest.raises(BuildError) as exc:
        runner_sources(["mnn"], folder)
    assert str(exc.value) == (
        f"the native runner has no mnn backend: {folder / 'backends' / 'mnn_gpu.cpp'} is missing"
    )
    with pytest.raises(BuildError) as exc:
        runner_sources(["onnxruntime"], folder)
    assert str(exc.value) == "the native runner has no onnxruntime backend: no recipe lists one"
