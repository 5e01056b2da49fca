"""``--metric energy`` on real generative records: llm-tiny on llama.cpp, measured twice with the
synthetic fuel gauge of test_generative_energy.py, then compared, ranked and traced. A
generative record's energy per inference is its energy per decoded token, so compare,
recommend and history label it mJ/tok (never mJ/inf, the tensor cells' unit)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fakes.llm_models import llm_tiny_gguf  # noqa: F401  # the fixture
from test_generative_energy import run_with_gauge

pytest.importorskip(
    "llama_cpp", reason="needs llama-cpp-python (pip install 'edgebench[llama-cpp]')"
)


def measured_with_energy(run_cli, eb_env: dict[str, str], folder: Path) -> dict:
    """One real llm-tiny run on llama.cpp with an energy source; its record."""
    record = run_with_gauge(run_cli, eb_env, folder)
    assert record["energy_mj_per_inf"] is not None, record["energy_flags"]
    return record


def test_compare_recommend_and_history_show_a_generative_energy_in_mj_per_token(
    run_cli,
    eb_env,
    tmp_path,
    llm_tiny_gguf,  # noqa: F811
):
    base = measured_with_energy(run_cli, eb_env, tmp_path / "base")
    new = measured_with_energy(run_cli, eb_env, tmp_path / "new")

    compared = run_cli(["compare", base["run_id"], new["run_id"], "--metric", "energy"])
    assert compared.returncode in (0, 1), compared.stderr  # 1: judged a regression
    assert "base energy mJ/tok" in compared.stdout and "new energy mJ/tok" in compared.stdout
    assert "mJ/inf" not in compared.stdout

    ranked = run_cli(
        ["recommend", "--run", new["run_id"], "--devices", new["device"], "--model", "llm-tiny",
         "--metric", "energy"]
    )  # fmt: skip
    assert ranked.returncode == 0, ranked.stdout + ranked.stderr
    assert "recommendation: llama.cpp" in ranked.stdout
    assert re.search(r"worst case [0-9.e+-]+ mJ/tok on ", ranked.stdout), ranked.stdout
    assert "mJ/inf" not in ranked.stdout

    trend = run_cli(
        ["history", "--device", new["device"], "--model", "llm-tiny", "--framework", "llama.cpp",
         "--metric", "energy", "--plot", str(tmp_path / "trend.svg")]
    )  # fmt: skip
    assert trend.returncode == 0, trend.stderr
    assert re.search(r"^run\s+created\s+energy \(mJ/tok\)\s+change", trend.stdout, re.M)
    assert "mJ/inf" not in trend.stdout
    assert "energy per decoded token (mJ/tok)" in (tmp_path / "trend.svg").read_text()
