"""The timed window's hooks (runners/timing.py run_window) and the ones a cell's telemetry and
conditions give it (runners/telemetry.py, runners/conditions.py)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pytest

from edgebench.runners.conditions import Governor
from edgebench.runners.protocol.spec import TelemetrySpec
from edgebench.runners.telemetry import CellTelemetry
from edgebench.runners.timing import WindowLimits, run_window

pytestmark = pytest.mark.load_sensitive

LIMITS = WindowLimits(iterations=3, min_time_ns=0, max_iterations=3, max_time_ns=10**10)


def logging_hook(log: list[str], name: str):
    @contextmanager
    def hook():
        log.append("enter " + name)
        try:
            yield
        finally:
            log.append("exit " + name)

    return hook()


def test_hooks_wrap_the_loop_outermost_first():
    log: list[str] = []

    def stream():
        log.append("run")
        return ["out"]

    window = run_window(
        [stream], LIMITS, hooks=[logging_hook(log, "outer"), logging_hook(log, "inner")]
    )
    assert log == ["enter outer", "enter inner", "run", "run", "run", "exit inner", "exit outer"]
    assert len(window.timing["samples_ns"]) == 3
    assert window.last_outputs == ["out"] and window.stage_samples is None


def test_hooks_are_left_when_the_loop_fails():
    log: list[str] = []

    def stream():
        raise RuntimeError("inference broke")

    with pytest.raises(RuntimeError, match="inference broke"):
        run_window([stream], LIMITS, hooks=[logging_hook(log, "a"), logging_hook(log, "b")])
    assert log == ["enter a", "enter b", "exit b", "exit a"]


def test_several_streams_run_inside_the_hooks_too():
    log: list[str] = []
    window = run_window(
        [lambda: log.append("run"), lambda: log.append("run")],
        LIMITS,
        hooks=[logging_hook(log, "h")],
    )
    assert log[0] == "enter h" and log[-1] == "exit h"
    assert log.count("run") == len(window.timing["samples_ns"]) >= 3
    assert window.last_outputs is None and window.timing["per_stream_counts"]


def fake_cpu(root: Path, cpu: int, governor: str) -> Path:
    folder = root / "sys/devices/system/cpu" / f"cpu{cpu}" / "cpufreq"
    folder.mkdir(parents=True)
    (folder / "scaling_governor").write_text(governor + "\n")
    (folder / "scaling_cur_freq").write_text("1000000\n")
    return folder / "scaling_governor"


def test_the_governor_is_set_for_the_cell_and_restored_after(tmp_path):
    path = fake_cpu(tmp_path, 0, "schedutil")
    with Governor(str(tmp_path), [0], "performance") as governor:
        assert path.read_text() == "performance"
    assert path.read_text() == "schedutil"
    assert governor.report["previous"] == {"0": "schedutil"}
    assert governor.report["restored"] is True and governor.report["errors"] == []


def test_cell_telemetry_marks_the_window_inside_the_marker_and_the_sampler(tmp_path):
    governor_file = fake_cpu(tmp_path, 0, "schedutil")
    marker = tmp_path / "window.marker"
    settings = TelemetrySpec(
        energy_source="none",
        period_s=0.005,
        root=str(tmp_path),
        sync_marker=str(marker),
        set_governor="performance",
    )
    seen: list[bool] = []

    def stream():
        seen.append(marker.exists() and governor_file.read_text() == "performance")

    with CellTelemetry(settings, [0]) as telemetry:
        assert telemetry.trace() is None  # no window yet
        window = run_window([stream], LIMITS, hooks=telemetry.window_hooks())
    trace = telemetry.trace()
    assert seen == [True, True, True]
    assert not marker.exists()
    assert governor_file.read_text() == "schedutil"
    assert trace["schema"] == "edgebench.telemetry/1"
    assert trace["marks"]["window_start"] <= trace["marks"]["window_end"]
    assert trace["marks"]["window_end"] - trace["marks"]["window_start"] >= sum(
        window.timing["samples_ns"]
    )
    assert trace["state_before"]["cpus"]["0"]["governor"] == "performance"
    assert trace["governor"]["previous"] == {"0": "schedutil"} and trace["governor"]["restored"]
