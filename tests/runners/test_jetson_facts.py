"""A Jetson's facts (runners/jetson.py) from the tools' real output formats and a synthetic
sysfs tree: power mode, clocks locked, GPU clock and load, nvmap memory, L4T and JetPack."""

from __future__ import annotations

import os

import pytest
from fakes.jetson_board import (
    NVPMODEL,
    NVPMODEL_VERBOSE,
    RELEASE_JP5,
    RELEASE_JP6,
    jetson_clocks_show,
    jetson_tools,
    jetson_tree,
    nvmap_listing,
    path_with,
)

from edgebench.runners.jetson import (
    TegraGpu,
    clocks_locked,
    jetson_facts,
    nvmap_memory_mb,
    parse_clocks,
    parse_nvpmodel,
    parse_release,
)


def test_nvpmodel_mode_and_id_plain_and_verbose():
    assert parse_nvpmodel(NVPMODEL.format(mode="MAXN", mode_id=0)) == ("MAXN", 0)
    assert parse_nvpmodel(NVPMODEL.format(mode="15W", mode_id=1)) == ("15W", 1)
    assert parse_nvpmodel(NVPMODEL_VERBOSE) == ("MODE_15W_6CORE", 2)
    assert parse_nvpmodel("nvpmodel: command failed\n") == (None, None)


def test_jetson_clocks_show_locked_and_free():
    locked = parse_clocks(jetson_clocks_show(True))
    assert set(locked) >= {"cpu0", "cpu5", "GPU", "EMC"}
    assert locked["GPU"] == {
        "MinFreq": 624750000,
        "MaxFreq": 624750000,
        "CurrentFreq": 624750000,
    }
    assert locked["EMC"]["FreqOverride"] == 1
    assert clocks_locked(locked) is True
    assert clocks_locked(parse_clocks(jetson_clocks_show(False))) is False
    assert clocks_locked({}) is None


def test_release_file_of_jetpack_5_and_6():
    assert parse_release(RELEASE_JP5) == "35.4.1"
    assert parse_release(RELEASE_JP6) == "36.4.7"
    assert parse_release("not a release line") is None


def test_the_synthetic_orin_gpu_is_found_through_devfreq(tmp_path):
    root = str(jetson_tree(tmp_path, load_permille=453))
    gpu = TegraGpu(root)
    assert gpu.devfreq.endswith("sys/class/devfreq/17000000.gpu")
    assert gpu.load_path.endswith("17000000.gpu/device/load")
    facts = gpu.facts()
    assert facts["name"] == "Orin (nvgpu)"
    assert facts["compute_capability"] == "8.7"
    assert facts["sm_clock_max_mhz"] == 624.8 and facts["sm_clock_min_mhz"] == 306.0
    assert facts["load_pct"] == 45.3


def test_facts_with_the_tools_on_path(tmp_path, monkeypatch):
    root = str(jetson_tree(tmp_path / "root"))
    monkeypatch.setenv("PATH", path_with(jetson_tools(tmp_path / "bin", mode="15W", mode_id=1)))
    facts = jetson_facts(root, os.getpid())
    assert facts["l4t"] == "36.4.7" and facts["jetpack"] == "6.2.1+b38"
    assert (facts["power_mode"], facts["power_mode_id"]) == ("15W", 1)
    assert facts["clocks_locked"] is True
    assert facts["clocks_source"] == "jetson_clocks --show"
    assert facts["gpu"]["compute_capability"] == "8.7"
    assert "debugfs needs root" in facts["unavailable"]["gpu_memory_mb"]


def test_without_the_tools_the_limits_say_whether_clocks_are_locked(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    free = jetson_facts(str(jetson_tree(tmp_path / "free")), os.getpid())
    assert free["power_mode"] is None
    assert free["unavailable"]["power_mode"] == "nvpmodel not found on PATH"
    assert free["clocks_locked"] is False
    assert "jetson_clocks not found on PATH" in free["clocks_source"]
    # The GPU's min limit below its max keeps it unlocked even with the CPUs locked ...
    assert (
        jetson_facts(str(jetson_tree(tmp_path / "cpu", cpu_locked=True)), 1)["clocks_locked"]
        is False
    )
    # ... and with both at their max it is locked.
    both = jetson_tree(tmp_path / "both", cpu_locked=True, gpu_min_hz=624750000)
    assert jetson_facts(str(both), 1)["clocks_locked"] is True


def test_nvmap_clients_sum_the_process_handles(tmp_path):
    root = jetson_tree(tmp_path, nvmap_clients=nvmap_listing(4242))
    assert nvmap_memory_mb(str(root), 4242) == (52.0, "")
    assert nvmap_memory_mb(str(root), 999) == (0.0, "")


def test_a_machine_that_is_no_jetson_has_no_jetson_facts(tmp_path):
    assert jetson_facts(str(tmp_path), os.getpid()) is None


@pytest.mark.parametrize("missing", ["/etc/nv_tegra_release", "/var/lib/dpkg/status"])
def test_each_missing_file_is_a_reason(tmp_path, missing):
    root = jetson_tree(tmp_path)
    (root / missing.lstrip("/")).unlink()
    facts = jetson_facts(str(root), os.getpid())
    key = "l4t" if "tegra" in missing else "jetpack"
    assert facts[key] is None
    assert missing in facts["unavailable"][key]
