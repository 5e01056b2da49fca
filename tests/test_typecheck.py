"""The type checker passes on edgebench and the runner package (tests/fakes/typecheck.py)."""

import importlib.util
import re

import pytest
from fakes.typecheck import REPO, run_mypy


def test_mypy_finds_no_errors():
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed: pip install -e '.[test]'")
    done = run_mypy()
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_every_type_ignore_names_its_error_code_and_why():
    """``# type: ignore[code]  # why`` only: a bare ignore hides every error on its line, and
    one without a reason cannot be judged when the code around it changes. (mypy itself,
    with warn_unused_ignores, reports an ignore that no longer silences anything.)"""
    pattern = re.compile(r"#\s*type:\s*ignore(?!\[[a-z-]+(?:,\s*[a-z-]+)*\]\s+#\s*\S)")
    found = [
        f"{path.relative_to(REPO)}:{number}"
        for folder in ("edgebench", "runners", "converters")
        for path in sorted((REPO / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, "ignores without a code and a reason:\n" + "\n".join(found)
