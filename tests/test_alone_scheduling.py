"""The suite's own scheduling (tests/fakes/alone_scheduling.py): a small suite in a fresh
pytest process with two workers, where each shared test leaves a mark when it starts and
when it ends, and each ``alone`` test records what it saw when it ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FAKES = Path(__file__).resolve().parent

_CONFTEST = f"""
import sys
sys.path.insert(0, {str(FAKES)!r})
pytest_plugins = ["fakes.alone_scheduling"]
"""

# Shared tests mark their start and end. The alone tests' file sorts first, so without the
# scheduler they would run at the start, beside the shared ones.
_SHARED = """
import os, pathlib, pytest
MARKS = pathlib.Path(os.environ["MARKS"])

@pytest.mark.parametrize("n", range({count}))
def test_shared(n):
    (MARKS / f"start-{{__name__}}-{{n}}").touch()
    sum(i * i for i in range(20000))
    (MARKS / f"end-{{__name__}}-{{n}}").touch()
"""

_ALONE = """
import json, os, pathlib, pytest
MARKS = pathlib.Path(os.environ["MARKS"])

@pytest.mark.alone
@pytest.mark.parametrize("n", range(3))
def test_alone(n):
    names = sorted(p.name for p in MARKS.iterdir())
    (MARKS / f"alone-{n}.json").write_text(json.dumps(names))
"""


def _run_suite(tmp_path: Path, shared_files: int, per_file: int) -> tuple[Path, str]:
    suite = tmp_path / "suite"
    marks = tmp_path / "marks"
    suite.mkdir()
    marks.mkdir()
    (suite / "conftest.py").write_text(_CONFTEST)
    for i in range(shared_files):
        (suite / f"test_shared_{i}.py").write_text(_SHARED.format(count=per_file))
    (suite / "test_a_alone.py").write_text(_ALONE)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider", str(suite)],
        cwd=suite,
        env={**_clean_env(), "MARKS": str(marks)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return marks, done.stdout


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}


def test_alone_tests_run_after_every_shared_test_has_ended(tmp_path: Path) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is not installed (pip install -e '.[test]')")
    shared_files, per_file = 4, 25
    marks, out = _run_suite(tmp_path, shared_files, per_file)
    assert f"{shared_files * per_file + 3} passed" in out, out
    shared_ends = {p.name for p in marks.glob("end-*")}
    assert len(shared_ends) == shared_files * per_file
    for n in range(3):
        seen = set(json.loads((marks / f"alone-{n}.json").read_text()))
        starts = {name for name in seen if name.startswith("start-")}
        ends = {name for name in seen if name.startswith("end-")}
        # Every shared test had started and ended before this one ran: none ran beside it.
        assert len(starts) == len(ends) == shared_files * per_file, (n, len(starts), len(ends))


def test_a_suite_of_only_alone_tests_runs_them_all(tmp_path: Path) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is not installed (pip install -e '.[test]')")
    marks, out = _run_suite(tmp_path, shared_files=0, per_file=0)
    assert "3 passed" in out, out
    assert sorted(p.name for p in marks.glob("alone-*")) == [f"alone-{n}.json" for n in range(3)]
