"""The TNN checking code (the reader and the NumPy executor in converters/tnn/checking/) is
loaded by the tests and for debugging only: importing the converters or converting a model to
TNN, as ``edgebench convert --to tnn`` does, leaves it unloaded."""

from __future__ import annotations

import json
import subprocess
import sys

CHECKING = "edgebench.converters.tnn.checking"

REPORT = """
import json, sys
print(json.dumps(sorted(m for m in sys.modules if m.startswith("edgebench.converters.tnn"))))
"""


def tnn_modules_after(code: str, env: dict[str, str]) -> list[str]:
    """The edgebench.converters.tnn modules a fresh interpreter holds after running ``code``
    (with the test's private cache and HOME)."""
    done = subprocess.run(
        [sys.executable, "-c", code + REPORT],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_the_converters_leaves_the_checking_code_unloaded(eb_env):
    loaded = tnn_modules_after(
        "import edgebench.converters, edgebench.converters.tnn, edgebench.converters.tnn_converter",
        eb_env,
    )
    assert "edgebench.converters.tnn.writer" in loaded
    assert not [m for m in loaded if m.startswith(CHECKING)]


def test_convert_to_tnn_leaves_the_checking_code_unloaded(eb_env, conv_model):
    convert = f"""
from click.testing import CliRunner
from edgebench.cli import cli
made = CliRunner().invoke(cli, ["convert", {str(conv_model)!r}, "--to", "tnn"])
assert made.exit_code == 0, made.output
assert ".tnnproto" in made.output, made.output
"""
    loaded = tnn_modules_after(convert, eb_env)
    assert "edgebench.converters.tnn.writer" in loaded
    assert not [m for m in loaded if m.startswith(CHECKING)]


def test_the_checking_package_is_what_debugging_imports(eb_env):
    loaded = tnn_modules_after(f"from {CHECKING} import read_model, run_model", eb_env)
    assert {f"{CHECKING}.reader", f"{CHECKING}.reference"} <= set(loaded)
