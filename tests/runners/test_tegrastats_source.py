"""The tegrastats energy source (runners/tegrastats.py): its lines in the JetPack 4, 5 and 6
spellings, and the source end to end with a fake tegrastats on PATH, a real child process it
starts and stops by PID."""

from __future__ import annotations

import os

import pytest
from fakes.jetson_board import (
    TEGRASTATS_AGX_JP5,
    TEGRASTATS_AGX_JP6,
    TEGRASTATS_NANO_JP5,
    TEGRASTATS_SPACED,
    TEGRASTATS_XAVIER_NX_JP4,
    jetson_tools,
    path_with,
)

from edgebench.runners.energy_source import TelemetryUnavailable
from edgebench.runners.energy_sources import make_source
from edgebench.runners.tegrastats import parse_line, total_mw

pytestmark = pytest.mark.load_sensitive


@pytest.mark.parametrize(
    "line, rails, total, load, freq",
    [
        (
            TEGRASTATS_NANO_JP5,
            {"VDD_IN": (4763, 4763), "VDD_CPU_GPU_CV": (556, 556), "VDD_SOC": (1429, 1429)},
            (4763, "rail VDD_IN"),
            45.0,
            624,
        ),
        (
            TEGRASTATS_AGX_JP5,
            {
                "VDD_GPU_SOC": (2400, 2400),
                "VDD_CPU_CV": (400, 400),
                "VIN_SYS_5V0": (2523, 2523),
                "VDDQ_VDD2_1V8AO": (301, 301),
            },
            (5624, "sum of rails VDD_GPU_SOC, VDD_CPU_CV, VIN_SYS_5V0, VDDQ_VDD2_1V8AO"),
            12.0,
            306,
        ),
        (
            TEGRASTATS_AGX_JP6,
            {"VDD_GPU_SOC": (3178, 3178), "VDD_CPU_CV": (794, 794), "VIN_SYS_5V0": (4543, 4543)},
            (8515, "sum of rails VDD_GPU_SOC, VDD_CPU_CV, VIN_SYS_5V0"),
            0.0,
            None,
        ),
        (
            TEGRASTATS_XAVIER_NX_JP4,
            {"VDD_IN": (5336, 4970), "VDD_CPU_GPU_CV": (2617, 2336), "VDD_SOC": (1478, 1318)},
            (5336, "rail VDD_IN"),
            61.0,
            None,
        ),
        (
            TEGRASTATS_SPACED,
            {"VDD_IN": (4395, 4401), "VDD_SOC": (1429, 1429)},
            (4395, "rail VDD_IN"),
            7.0,
            None,
        ),
    ],
)
def test_lines_of_each_jetpack(line, rails, total, load, freq):
    parsed = parse_line(line)
    assert parsed["rails"] == rails
    assert total_mw(parsed["rails"]) == total
    assert parsed["gpu_load_pct"] == load
    assert parsed["gpu_freq_mhz"] == freq


def test_a_line_without_rails_has_no_total():
    parsed = parse_line("RAM 5137/62841MB (lfb 2x4MB) SWAP 0/31420MB NC 0mW/0mW")
    assert parsed["rails"] == {} and total_mw(parsed["rails"]) == (None, "no rails")


def test_not_on_path_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TelemetryUnavailable, match=r"^tegrastats: not found on PATH"):
        make_source("tegrastats", root=str(tmp_path))


def test_the_source_runs_tegrastats_and_stops_it_by_pid(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", path_with(jetson_tools(tmp_path / "bin")))
    source = make_source("tegrastats", root=str(tmp_path))
    child = source.child
    try:
        assert child.poll() is None
        reading = source.read()
        assert reading.power_w == pytest.approx(4.763)
        assert reading.energy_j is None
        assert source.gpu() == {"load_pct": 45.0, "freq_mhz": 624}
        info = source.describe()
        assert info["command"].endswith("tegrastats --interval 100")
        assert info["total"] == "rail VDD_IN"
        assert info["rails"] == ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"]
    finally:
        source.close()
    assert child.returncode is not None
    with pytest.raises(ProcessLookupError):
        os.kill(child.pid, 0)  # reaped: the PID names no process
    source.close()  # idempotent


def test_auto_takes_tegrastats_where_no_ina3221_is_readable(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", path_with(jetson_tools(tmp_path / "bin")))
    source = make_source("auto", root=str(tmp_path / "empty"))
    try:
        assert source.kind == "tegrastats"
        skipped = source.describe()["auto_skipped"]
        assert list(skipped) == ["android_odpm", "android_fuel_gauge", "ina3221"]
    finally:
        source.close()
