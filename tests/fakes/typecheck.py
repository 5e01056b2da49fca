"""mypy over the package as it installs: edgebench/ with runners/, converters/ and
device_profiles/ in it where pyproject.toml's package-dir puts them (a tree of symlinks in a
temporary folder, since mypy cannot map folders to packages itself), and the scripts in
benchmarks/, which call the package's own APIs.

    python tests/fakes/typecheck.py  prints mypy's report and exits with its status

The strictness is pyproject.toml's [tool.mypy] (docs/ARCHITECTURE.md says which and why).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: Package folders that live at the top of the repository, by their place in edgebench.
MAPPED = {"runners": "runners", "converters": "converters", "device_profiles": "device_profiles"}


def link_tree(root: Path) -> Path:
    """``root/edgebench``: every file of edgebench/ linked, and the mapped folders linked in."""
    package = root / "edgebench"
    for path in (REPO / "edgebench").rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        target = package / path.relative_to(REPO / "edgebench")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(path)
    for name, folder in MAPPED.items():
        (package / name).symlink_to(REPO / folder, target_is_directory=True)
    return package


def run_mypy(timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    """mypy on the linked package, with the repository's config and a cache of its own."""
    with tempfile.TemporaryDirectory(prefix="edgebench-mypy-") as tmp:
        link_tree(Path(tmp))
        # The benchmarks drive the package's own APIs, so a change to one is checked there too.
        (Path(tmp) / "benchmarks").symlink_to(REPO / "benchmarks", target_is_directory=True)
        scripts = sorted(f"benchmarks/{p.name}" for p in (REPO / "benchmarks").glob("*.py"))
        cache = REPO / ".mypy_cache"
        argv = [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml")]
        argv += ["--cache-dir", str(cache), "edgebench", *scripts]
        return subprocess.run(
            argv, cwd=tmp, capture_output=True, text=True, timeout=timeout, env=dict(os.environ)
        )


if __name__ == "__main__":
    done = run_mypy()
    sys.stdout.write(done.stdout + done.stderr)
    sys.exit(done.returncode)
