"""benchmarks/llm_fidelity.py analyses a saved run again without measuring: ``--save-blocks``
writes every row's blocks, ``--from-blocks`` prints the same table from them, with either
estimator of edgebench/analysis/block_ratio.py (``--estimator pooled|paired``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.llm_models import llama_bench_or_skip, llm_tiny_q8_0  # noqa: F401  # the fixture

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "llm_fidelity.py"
ROW = r"^{name}\s+{test}\s+[\d.]+\s+[\d.]+\s+([\d.]+) \[([\d.]+), ([\d.]+)\]"


def run_script(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        check=False,
    )


def ratio_row(stdout: str, name: str, test: str) -> tuple[float, float, float]:
    found = re.search(ROW.format(name=re.escape(name), test=re.escape(test)), stdout, re.M)
    assert found, stdout
    ratio, low, high = map(float, found.groups())
    return ratio, low, high


def drifting_blocks(path: Path) -> None:
    """Six block pairs on a machine that slows down pair by pair (each pair's A and B alike);
    A is 3% slower than B within every pair."""
    a_blocks, b_blocks = [], []
    for i in range(6):
        b_tg = [100.0 * (1 - 0.05 * i) + d for d in (0.0, 0.1, -0.1)]
        a_tg = [0.97 * x for x in b_tg]
        b_blocks.append({"pp": b_tg, "tg": b_tg, "pp_fixed": b_tg, "tg_fixed": b_tg})
        a_blocks.append({"pp": a_tg, "tg": a_tg, "pp_fixed": a_tg, "tg_fixed": a_tg})
    row = {
        "name": "drifting q8_0",
        "notes": ["saved note"],
        "seconds_per_pair": 12.0,
        "a_blocks": a_blocks,
        "b_blocks": b_blocks,
    }
    settings = {"prompt_tokens": 64, "gen_tokens": 16, "repetitions": 3, "threads": 1}
    document = {"settings": {**settings, "cores": [1]}, "rows": [row]}
    path.write_text(json.dumps(document))


def test_saved_blocks_are_analysed_again_with_either_estimator(tmp_path):
    saved = tmp_path / "blocks.json"
    drifting_blocks(saved)
    pooled = run_script("--from-blocks", str(saved))
    assert pooled.returncode == 0, pooled.stdout + pooled.stderr
    assert "blocks read from" in pooled.stdout and "pp64 and tg16" in pooled.stdout
    assert "    saved note" in pooled.stdout
    paired = run_script("--from-blocks", str(saved), "--estimator", "paired")
    assert paired.returncode == 0, paired.stdout + paired.stderr
    assert "median of the block pairs' own ratios" in paired.stdout

    pooled_tg = ratio_row(pooled.stdout, "drifting q8_0", "tg")
    paired_tg = ratio_row(paired.stdout, "drifting q8_0", "tg")
    # Each pair's own ratio is 0.97, so the paired interval is that point; the pooled ratio
    # of medians, over blocks drawn in pairs, is 0.97 too.
    assert paired_tg == pytest.approx((0.97, 0.97, 0.97), abs=1e-4)
    assert pooled_tg[1] <= pooled_tg[0] <= pooled_tg[2]
    assert pooled_tg[0] == pytest.approx(0.97, abs=0.005)


def test_a_damaged_saved_file_is_one_line(tmp_path):
    saved = tmp_path / "blocks.json"
    saved.write_text('{"rows": []}')
    done = run_script("--from-blocks", str(saved))
    assert done.returncode != 0
    assert done.stderr.strip().startswith("llm_fidelity: cannot read saved blocks")
    assert "Traceback" not in done.stderr


def test_a_measured_run_saved_and_read_back_prints_the_same_table(
    tmp_path,
    llm_tiny_q8_0,  # noqa: F811
):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    llama_bench_or_skip()
    saved = tmp_path / "blocks.json"
    measured = run_script("--quick", "--save-blocks", str(saved), timeout=300)
    assert measured.returncode == 0, measured.stdout + measured.stderr
    again = run_script("--quick", "--from-blocks", str(saved))
    assert again.returncode == 0, again.stdout + again.stderr

    def table(stdout: str) -> list[str]:
        return [line for line in stdout.splitlines() if line.startswith("llm-tiny q8_0")]

    assert table(measured.stdout) and table(again.stdout) == table(measured.stdout)
