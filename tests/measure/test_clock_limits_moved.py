"""A cpufreq limit that moves during the timed window is a warning on the record: a real run of
the Python runner on a synthetic cpufreq tree (read through EDGEBENCH_SYSFS_ROOT), where a
"thermal daemon" thread caps the pinned core's cluster once the window's sync marker appears."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from fakes.cpufreq_tree import set_limit, write_phone_cpus

pytestmark = pytest.mark.load_sensitive

QUICK = ["--warmup", "1", "--iterations", "5", "--format", "jsonl"]


def cap_when_the_window_opens(marker: Path, policy: Path, stop: threading.Event) -> None:
    deadline = time.monotonic() + 120
    while not marker.exists() and not stop.is_set() and time.monotonic() < deadline:
        time.sleep(0.005)
    if marker.exists():
        set_limit(policy, "scaling_max_freq", 1500000)


def test_a_cap_during_the_window_is_named_on_the_record(run_cli, eb_env, tmp_path, conv_model):
    policies = write_phone_cpus(tmp_path / "sysfs")
    eb_env["EDGEBENCH_SYSFS_ROOT"] = str(tmp_path / "sysfs")
    marker = tmp_path / "window-open"
    stop = threading.Event()
    daemon = threading.Thread(
        target=cap_when_the_window_opens, args=(marker, policies["little"], stop)
    )
    daemon.start()
    try:
        result = run_cli(
            [
                "run",
                "--models",
                str(conv_model),
                "--frameworks",
                "onnxruntime",
                "--cores",
                "0",
                "--energy-source",
                "none",
                "--sync-marker",
                str(marker),
                "--min-time",
                "1",
                *QUICK,
            ]
        )
    finally:
        stop.set()
        daemon.join(timeout=30)
    assert result.returncode == 0, result.stderr
    (record,) = map(json.loads, result.stdout.splitlines())
    trace = record["telemetry"]
    assert trace["state_before"]["cpus"]["0"]["scaling_max_khz"] == 1804800
    assert trace["state_after"]["cpus"]["0"]["scaling_max_khz"] == 1500000
    (moved,) = [d for d in record["warning_details"] if d["kind"] == "clock_limits_moved"]
    assert moved["figures"] == {"changes": ["max freq 1.805 -> 1.5 GHz on cpu0"]}
    assert any(w.startswith("clocks moved during the window: max freq") for w in record["warnings"])
