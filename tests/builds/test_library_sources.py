"""mnn-llm is built into MNN's library from MNN's source: `runners build` given a source for
each refuses in one line, before anything is built, instead of letting the later one win."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgebench.builds import BuildError
from edgebench.builds.native_runner import library_sources


def test_two_sources_for_mnn_s_library_are_refused_before_any_build(run_cli, eb_env, tmp_path):
    mnn, mnn_llm = tmp_path / "MNN-3.2.0", tmp_path / "MNN-3.3.0"
    mnn.mkdir()
    mnn_llm.mkdir()
    cache = Path(eb_env["EDGEBENCH_CACHE"])
    before = sorted(cache.iterdir())
    result = run_cli(
        ["runners", "build", "--source", f"mnn={mnn}", "--source", f"mnn-llm={mnn_llm}"],
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        f"edgebench: error: --source mnn={mnn} and --source mnn-llm={mnn_llm} both give mnn's "
        "source (mnn-llm is built into mnn's library): give --source mnn= only\n"
    )
    assert result.stdout == ""
    assert sorted(cache.iterdir()) == before  # nothing was built, nothing unpacked


def test_each_source_is_keyed_by_the_library_it_builds(tmp_path):
    mnn, other = tmp_path / "mnn", tmp_path / "other"
    assert library_sources({"mnn-llm": mnn}) == {"mnn": mnn}
    assert library_sources({"mnn": mnn, "mnn-llm": mnn, "ncnn": other}) == {
        "mnn": mnn,
        "ncnn": other,
    }
    with pytest.raises(BuildError) as exc:
        library_sources({"mnn-llm": other, "mnn": mnn})
    assert str(exc.value) == (
        f"--source mnn-llm={other} and --source mnn={mnn} both give mnn's source "
        "(mnn-llm is built into mnn's library): give --source mnn= only"
    )
