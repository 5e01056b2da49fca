"""The real CLI run in a subprocess (``run_cli``, ``cli``) with a private cache, results and HOME;
and what every bad-input test asserts of it: one ``edgebench: error:`` line, exit 2, no
traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

FAST = ["--iterations", "3", "--min-time", "0", "--warmup", "0", "--format", "jsonl"]
ERROR_PREFIX = "edgebench: error:"


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(eb_env: dict[str, str]):
    """Run the real `edgebench` entry point in a subprocess."""

    def run(args: Sequence[str], timeout: float = 300) -> CliResult:
        return cli(args, eb_env, timeout=timeout)

    return run


@pytest.fixture(scope="module")
def mod_env(tmp_path_factory: pytest.TempPathFactory, shared_models: Path) -> dict[str, str]:
    """Like fakes.environment's eb_env, but shared by the module's one-run-many-cases fixtures."""
    base = tmp_path_factory.mktemp("bad-input-env")
    cache = base / "eb-cache"
    cache.mkdir()
    (cache / "models").symlink_to(shared_models, target_is_directory=True)
    home = base / "eb-home"
    home.mkdir()
    env = dict(os.environ)
    env.update(EDGEBENCH_CACHE=str(cache), EDGEBENCH_RESULTS=str(base / "eb-results"))
    env.update(HOME=str(home))
    env.pop("EDGEBENCH_LAB", None)
    return env


def cli(
    args: Sequence[str], env: dict[str, str], cwd: Path | None = None, timeout: float = 300
) -> CliResult:
    proc = subprocess.run(
        [sys.executable, "-m", "edgebench", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def records_of(result: CliResult) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def assert_no_traceback(result: CliResult) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert "Traceback" not in result.stdout, result.stdout


def assert_one_error_line(result: CliResult, *, only_line: bool = True) -> str:
    """Exit 2, no traceback, exactly one ``edgebench: error:`` line and no click usage block.

    ``only_line``: the error is the only stderr line (no progress lines before it)."""
    assert_no_traceback(result)
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith(ERROR_PREFIX)]
    assert len(errors) == 1, result.stderr
    assert lines[-1] == errors[0], result.stderr
    if only_line:
        assert lines == errors, result.stderr
    assert not any(ln.startswith(("Usage:", "Error:", "Try ")) for ln in lines), result.stderr
    return errors[0]


def assert_failed_record(record: dict) -> None:
    assert record["status"] == "failed", record
    error = record["error"]
    assert isinstance(error, str) and error.strip(), record
    assert "\n" not in error and "Traceback" not in error, error
