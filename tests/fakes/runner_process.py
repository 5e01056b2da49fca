"""The Python runner run as a device runs it: a subprocess fed one JSON spec on stdin."""

from __future__ import annotations

import json
import subprocess
import sys

#: The installed package's runner, as the host's local device runs it.
RUNNER_ARGV = [sys.executable, "-m", "edgebench.runners"]


def run_runner(spec: dict | str, timeout: float = 120, env: dict[str, str] | None = None) -> dict:
    """Run the runner as a device would (in ``env``, else this process's environment) and
    return its parsed result."""
    payload = spec if isinstance(spec, str) else json.dumps(spec)
    proc = subprocess.run(
        [*RUNNER_ARGV, "-"],
        input=payload,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("EDGEBENCH_RESULT ")]
    assert len(lines) == 1, proc.stdout
    return json.loads(lines[0].split(" ", 1)[1])
