"""A run without --cluster neither imports nor needs Ray; --cluster without Ray says how to
install it, in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fakes.models import save_conv_model

# Ray made unimportable (``import ray`` raises ImportError) before edgebench starts.
BLOCKED = """
import sys
sys.modules["ray"] = None
from edgebench.cli import main
sys.argv = ["edgebench", *sys.argv[1:]]
try:
    main()
finally:
    print("ray imported:", sys.modules.get("ray") is not None, file=sys.stderr)
"""


def blocked_run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCKED, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_a_plain_run_neither_imports_nor_needs_ray(tmp_path: Path, eb_env):
    model = save_conv_model(tmp_path / "tiny.onnx", [1, 3, 8, 8])
    done = blocked_run(
        eb_env, "run", "--models", str(model), "--frameworks", "onnxruntime",
        "--iterations", "2", "--warmup", "0", "--min-time", "0",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "ray imported: False" in done.stderr
    assert "| onnxruntime" in done.stdout or "onnxruntime" in done.stdout


def test_cluster_without_ray_says_how_to_install_it(eb_env):
    done = blocked_run(eb_env, "run", "--cluster", "127.0.0.1:6379", "--devices", "x")
    assert done.returncode == 2
    error = [line for line in done.stderr.splitlines() if line.startswith("edgebench:")]
    assert error == [
        "edgebench: error: --cluster needs Ray, which is not installed: "
        "pip install 'edgebench[cluster]'"
    ]
