"""The command line imports a command's module only when the command is used: the read
commands start without the lab, the builds or ONNX, and `--help` still lists every command."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

from edgebench.cli.app import COMMAND_MODULES, cli

CLI_FOLDER = Path(__file__).resolve().parents[2] / "edgebench" / "cli"
#: Modules of the command line that declare no command.
HELPERS = {"__init__", "app", "options", "values"}

#: What the read commands never need: ONNX (its ml_dtypes alone takes 0.45 s to import) and
#: the lab's devices, the native builds, the converters and the measuring that bring it in.
HEAVY = {"onnx", "ml_dtypes"}
HEAVY_OURS = (
    "edgebench.lab.device",
    "edgebench.builds",
    "edgebench.converters",
    "edgebench.measure",
)

#: Prints the edgebench and third-party modules a command imported, one a line.
LOADED = """
import sys
from edgebench.cli import app
sys.argv = ["edgebench", *sys.argv[1:]]
try:
    app.main()
except SystemExit:
    pass
print("\\n".join(sorted(sys.modules)))
"""


def test_every_command_is_in_the_table_under_its_module():
    for path in CLI_FOLDER.glob("*.py"):
        if path.stem not in HELPERS:
            importlib.import_module(f"edgebench.cli.{path.stem}")
    declared = {name: command.callback.__module__ for name, command in dict(cli.commands).items()}
    assert declared == {name: f"edgebench.cli.{m}" for name, m in COMMAND_MODULES.items()}


def test_help_lists_every_command():
    done = subprocess.run(
        [sys.executable, "-m", "edgebench", "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    listed = done.stdout.split("Commands:", 1)[1].split()
    assert set(COMMAND_MODULES) <= set(listed), done.stdout


def test_the_read_commands_do_not_import_the_lab_the_builds_or_onnx(tmp_path):
    results = str(tmp_path / "results")
    for command in (["show"], ["history"], ["compare", "a", "b"], ["export"]):
        done = subprocess.run(
            [sys.executable, "-c", LOADED, *command, "--results-dir", results],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "no stored runs" in done.stderr or done.returncode == 0, done.stderr
        loaded = done.stdout.splitlines()
        heavy = [m for m in loaded if m.split(".")[0] in HEAVY or m.startswith(HEAVY_OURS)]
        assert not heavy, (command, heavy)
        assert "edgebench.cli.results" in loaded
