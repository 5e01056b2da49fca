"""The runner as the device gets it: the files the host pushes, laid out as the device has them
(the package as ``edgebench_runner/`` beside the entry script), run from that folder, and the same
modules imported by the host as ``edgebench.runners.<name>``."""

import importlib
import json
import subprocess
import sys

import pytest

from edgebench.lab.runner_tree import (
    DEVICE_PACKAGE,
    ENTRY_SCRIPT,
    RUNNER_PACKAGE,
    SUBPACKAGES,
    runner_tree,
    write_runner_tree,
)

MODULES = sorted(
    p.stem
    for p in RUNNER_PACKAGE.glob("*.py")
    if p.stem not in ("__init__", "__main__", "launcher")
) + sorted(f"protocol.{p.stem}" for p in (RUNNER_PACKAGE / "protocol").glob("*.py"))


@pytest.fixture(scope="module")
def pushed(tmp_path_factory):
    """A copy of exactly what a remote device receives, laid out as it is there."""
    folder = tmp_path_factory.mktemp("device") / "runner"
    write_runner_tree(folder)
    return folder


def test_the_device_gets_the_entry_script_and_the_package():
    where = [relative for _, relative in runner_tree()]
    assert where[0] == ENTRY_SCRIPT
    assert f"{DEVICE_PACKAGE}/__init__.py" in where
    assert f"{DEVICE_PACKAGE}/backends/__init__.py" in where
    assert f"{DEVICE_PACKAGE}/protocol/__init__.py" in where
    assert all(w == ENTRY_SCRIPT or w.startswith(f"{DEVICE_PACKAGE}/") for w in where)


def test_every_subpackage_of_the_runner_is_pushed():
    found = {p.parent.name for p in RUNNER_PACKAGE.glob("*/__init__.py")}
    assert found == set(SUBPACKAGES)


def test_every_runner_module_imports_on_the_device_from_the_pushed_files(pushed):
    script = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    names = [f"{DEVICE_PACKAGE}.{m}" for m in MODULES]
    proc = subprocess.run(
        [sys.executable, "-c", script, *names],
        cwd=pushed,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def test_the_pushed_runner_answers_a_probe_from_another_folder(pushed, tmp_path):
    proc = subprocess.run(
        [sys.executable, str(pushed / ENTRY_SCRIPT), "--probe"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    probe = json.loads(proc.stdout.strip().splitlines()[-1].split(" ", 1)[1])
    assert probe["frameworks"]["onnxruntime"]["available"] is True
    # The accelerator probe's child imported the pushed package too.
    assert "probe failed" not in json.dumps(probe.get("accelerators", {}))


@pytest.mark.parametrize("name", MODULES)
def test_every_runner_module_imports_on_the_host(name):
    module = importlib.import_module(f"edgebench.runners.{name}")
    assert module.__name__ == f"edgebench.runners.{name}"


def test_no_runner_module_edits_sys_path_or_imports_both_ways():
    for path in RUNNER_PACKAGE.rglob("*.py"):
        text = path.read_text()
        assert "if __package__" not in text, path
        assert "sys.path.insert" not in text, path
