"""The runner folder as the device gets it: the files the host pushes, run from a bare folder,
and the same modules imported by the host as ``edgebench.runners.<name>``."""

import importlib
import json
import shutil
import subprocess
import sys

import pytest

from edgebench.lab.remote import RUNNER_DIR, runner_files

FLAT_MODULES = sorted(p.stem for p in RUNNER_DIR.glob("*.py") if p.name != "__init__.py")


@pytest.fixture(scope="module")
def pushed(tmp_path_factory):
    """A copy of exactly what a remote device receives, laid out as it is there."""
    folder = tmp_path_factory.mktemp("device") / "runner"
    for path in runner_files():
        target = folder / path.relative_to(RUNNER_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return folder


def test_every_runner_module_imports_on_the_device_from_the_pushed_files(pushed):
    # Top-level imports from a bare folder (no package), as runner.py has them.
    script = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    proc = subprocess.run(
        [sys.executable, "-c", script, *FLAT_MODULES],
        cwd=pushed,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def test_the_pushed_runner_answers_a_probe(pushed):
    proc = subprocess.run(
        [sys.executable, str(pushed / "runner.py"), "--probe"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    probe = json.loads(proc.stdout.strip().splitlines()[-1].split(" ", 1)[1])
    assert probe["frameworks"]["onnxruntime"]["available"] is True


# runner.py, the device's entry script, is left out: it puts its own folder on sys.path.
@pytest.mark.parametrize("name", [m for m in FLAT_MODULES if m != "runner"])
def test_every_runner_module_imports_on_the_host(name):
    module = importlib.import_module(f"edgebench.runners.{name}")
    assert module.__name__ == f"edgebench.runners.{name}"
