"""Device-side telemetry: energy sources, the sampler and state snapshots, on synthetic sysfs
trees written with the real layouts (values with a trailing newline, as the kernel shows them)."""

from __future__ import annotations

import errno
import json
import math
import os
import threading
import time
from pathlib import Path

import pytest

from edgebench.runners import sysfs
from edgebench.runners.device_state import MAX_ZONES, find_zones, read_state
from edgebench.runners.energy_source import EnergySource, Reading, TelemetryUnavailable
from edgebench.runners.energy_sources import make_source
from edgebench.runners.ina3221 import ina_unconnected
from edgebench.runners.odpm import parse_odpm
from edgebench.runners.protocol.telemetry import AUTO_ORDER
from edgebench.runners.rapl import RAPL_PERMISSION_HINT
from edgebench.runners.sampler import MIN_PERIOD_S, Sampler, idle_baseline

pytestmark = pytest.mark.load_sensitive

WAIT_S = 10.0  # generous upper bound for wait_samples; the tests normally take milliseconds


def write(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{value}\n")


def replace(path: Path, value: object) -> None:
    """Swap a file's content atomically, so a concurrent reader never sees it half-written."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(f"{value}\n")
    os.replace(tmp, path)


# --- synthetic trees -------------------------------------------------------------------------


def fuel_gauge(root: Path, current, voltage, status="Discharging", usb=None) -> Path:
    battery = root / "sys/class/power_supply/battery"
    write(battery / "current_now", current)
    write(battery / "voltage_now", voltage)
    if status is not None:
        write(battery / "status", status)
    if usb is not None:
        write(root / "sys/class/power_supply/usb/online", usb)
    return battery


ODPM_MAIN = """t=14318470
CH0(T=14318470)[S10M_VDD_TPU], 3212245
CH1(T=14318470)[VSYS_PWR_MODEM], 48936312
CH2(T=14318470)[VSYS_PWR_RFFE], 1234
CH3(T=14318470)[S2M_VDD_CPUCL2], 20735402
CH4(T=14318470)[S3M_VDD_CPUCL1], 8236412
CH5(T=14318470)[S4M_VDD_CPUCL0], 25312455
CH6(T=14318470)[S5M_VDD_INT], 9235523
CH7(T=14318470)[S1M_VDD_MIF], 15531234
"""
ODPM_SUB = """t=14318472
CH0(T=14318472)[VSYS_PWR_DISPLAY], 65443212
CH1(T=14318472)[L2S_VDD_AOC_RET], 123
CH2(T=14318472)[S9S_VDD_AOC], 9876543
CH3(T=14318472)[S5S_VDDQ_MEM], 1234567
CH4(T=14318472)[S10S_VDD2L], 2345678
CH5(T=14318472)[S4S_VDD2H_MEM], 3456789
CH6(T=14318472)[S2S_VDD_G3D], 4567890
CH7(T=14318472)[L9S_GNSS_CORE], 5678
"""


def odpm_total_uws(*texts: str) -> int:
    return sum(int(line.rsplit(",", 1)[1]) for t in texts for line in t.splitlines()[1:])


def odpm(root: Path, main: str = ODPM_MAIN, sub: str = ODPM_SUB) -> None:
    # drivers/iio/power/odpm.c: one iio device per PMIC, energy_value already ends in "\n"
    for index, text in enumerate((main, sub)):
        device = root / f"sys/bus/iio/devices/iio:device{index}"
        device.mkdir(parents=True, exist_ok=True)
        (device / "energy_value").write_text(text)
        write(device / "name", f"s2mpg1{index}-odpm")


def ina3221_hwmon(root: Path, address: str, channels: dict, hwmon: int = 1) -> Path:
    """JetPack 5+: <i2c dev>/hwmon/hwmonN/in{N}_label, in{N}_input (mV), curr{N}_input (mA)."""
    device = root / "sys/bus/i2c/devices" / address
    write(device / "name", "ina3221")
    folder = device / "hwmon" / f"hwmon{hwmon}"
    write(folder / "name", "ina3221")
    for number, (label, millivolts, milliamps) in channels.items():
        write(folder / f"in{number}_label", label)
        write(folder / f"in{number}_input", millivolts)
        if milliamps is not None:
            write(folder / f"curr{number}_input", milliamps)
    # shunt voltages in4..in6 have inputs but no labels: never rails
    write(folder / "in4_input", 40)
    return folder


def ina3221_iio(root: Path, address: str, rails: list) -> Path:
    """JetPack 4: <i2c dev>/iio:deviceN/rail_name_N and in_power{N}_input (mW)."""
    device = root / "sys/bus/i2c/devices" / address
    write(device / "name", "ina3221x")
    folder = device / "iio:device0"
    for number, (label, milliwatts) in enumerate(rails):
        write(folder / f"rail_name_{number}", label)
        write(folder / f"in_power{number}_input", milliwatts)
        write(folder / f"in_voltage{number}_input", 5000)
    return folder


def rapl(root: Path, energy_uj: int, max_range_uj: int = 262143328850) -> Path:
    folder = root / "sys/class/powercap/intel-rapl:0"
    write(folder / "name", "package-0")
    write(folder / "energy_uj", energy_uj)
    write(folder / "max_energy_range_uj", max_range_uj)
    return folder


def cpus_and_zones(root: Path) -> None:
    for cpu, (gov, cur, top) in {
        0: ("schedutil", 1800000, 1800000),
        4: ("schedutil", 2400000, 2850000),
    }.items():
        folder = root / f"sys/devices/system/cpu/cpu{cpu}/cpufreq"
        write(folder / "scaling_governor", gov)
        write(folder / "scaling_cur_freq", cur)
        write(folder / "cpuinfo_max_freq", top)
        write(folder / "scaling_max_freq", top)
        write(folder / "cpuinfo_min_freq", 300000)
        write(folder / "scaling_min_freq", 600000)
    zones = [("cpu-1-0-usr", 45000), ("battery", 31500), ("cpu-1-1-usr", 47250)]
    for index, (zone_type, milli) in enumerate(zones):
        folder = root / f"sys/class/thermal/thermal_zone{index}"
        write(folder / "type", zone_type)
        write(folder / "temp", milli)


# --- android_fuel_gauge ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "current, voltage, units, sign",
    [
        (-450000, 3850000, ("uA", "uV"), "negative"),  # nominal ABI units, discharge negative
        (450000, 3850000, ("uA", "uV"), "positive"),  # discharge reported positive
        (-450, 3850, ("mA", "mV"), "negative"),  # vendor driver in mA/mV
        (450, 3850, ("mA", "mV"), "positive"),
        (450, 3850000, ("mA", "uV"), "positive"),  # mixed units seen on some vendor kernels
    ],
)
def test_fuel_gauge_detects_units_and_reports_the_raw_sign(tmp_path, current, voltage, units, sign):
    fuel_gauge(tmp_path, current, voltage)
    source = make_source("android_fuel_gauge", root=str(tmp_path))
    reading = source.read()
    assert reading.power_w == pytest.approx(0.450 * 3.850)
    assert reading.energy_j is None and reading.wrapped is False
    assert reading.charging is False
    info = source.describe()
    assert (info["current_unit"], info["voltage_unit"]) == units
    assert info["raw_sign"] == sign
    assert info["kind"] == "android_fuel_gauge"


def test_fuel_gauge_units_can_be_given(tmp_path):
    # 5 mA in µA (deep idle) would be read as 5 A by the magnitude rule: the override fixes it.
    fuel_gauge(tmp_path, -5000, 3850000)
    detected = make_source("android_fuel_gauge", root=str(tmp_path))
    assert detected.describe()["current_unit"] == "mA"
    given = make_source("android_fuel_gauge", root=str(tmp_path), current_unit="uA")
    assert given.read().power_w == pytest.approx(0.005 * 3.85)
    assert given.describe()["units_given"] == {"current": True, "voltage": False}


def test_fuel_gauge_flags_charging_from_status(tmp_path):
    fuel_gauge(tmp_path, 1200000, 4200000, status="Charging", usb=0)
    source = make_source("android_fuel_gauge", root=str(tmp_path))
    assert source.read().charging is True
    info = source.describe()
    assert info["charging_via"] == ["battery/status"]
    assert info["charging_indicators"] == ["battery/status", "usb/online"]


def test_fuel_gauge_flags_charging_from_usb_online(tmp_path):
    # A full battery on USB says "Full" (or "Not charging"), yet the charger feeds the device.
    fuel_gauge(tmp_path, 20000, 4350000, status="Full", usb=1)
    source = make_source("android_fuel_gauge", root=str(tmp_path))
    assert source.read().charging is True
    assert source.describe()["charging_via"] == ["usb/online"]


def test_fuel_gauge_without_charging_indicators_says_unknown(tmp_path):
    fuel_gauge(tmp_path, -450000, 3850000, status=None)
    source = make_source("android_fuel_gauge", root=str(tmp_path))
    assert source.read().charging is None


# --- android_odpm ----------------------------------------------------------------------------


def test_odpm_parses_the_driver_format():
    t_ms, rails = parse_odpm(ODPM_MAIN)
    assert t_ms == 14318470
    assert rails[0] == ("CH0", "S10M_VDD_TPU", 3212245)
    assert [ch for ch, _, _ in rails] == [f"CH{i}" for i in range(8)]


def test_odpm_sums_all_rails_of_both_pmics(tmp_path):
    odpm(tmp_path)
    source = make_source("android_odpm", root=str(tmp_path))
    reading = source.read()
    assert reading.power_w is None
    assert reading.energy_j == pytest.approx(odpm_total_uws(ODPM_MAIN, ODPM_SUB) / 1e6)
    info = source.describe()
    assert info["unit"] == "uWs" and info["rails_selected"] == "all"
    assert len(info["devices"]) == 2
    assert info["devices"][1]["rails"][0] == {"channel": "CH0", "name": "VSYS_PWR_DISPLAY"}
    assert info["device_t_ms"] == [14318470, 14318472]


def test_odpm_sums_selected_rails_and_follows_the_counter(tmp_path):
    odpm(tmp_path)
    source = make_source("android_odpm", root=str(tmp_path), rails=["S*_VDD_CPUCL*"])
    first = source.read().energy_j
    assert first == pytest.approx((20735402 + 8236412 + 25312455) / 1e6)
    grown = ODPM_MAIN.replace("], 20735402", "], 21735402")  # CPUCL2 +1 J
    (tmp_path / "sys/bus/iio/devices/iio:device0/energy_value").write_text(grown)
    assert source.read().energy_j == pytest.approx(first + 1.0)
    assert source.describe()["devices"][0]["selected"] == [
        "S2M_VDD_CPUCL2",
        "S3M_VDD_CPUCL1",
        "S4M_VDD_CPUCL0",
    ]


def test_odpm_channel_restart_keeps_the_sum_monotonic(tmp_path):
    odpm(tmp_path)
    source = make_source("android_odpm", root=str(tmp_path), rails=["S10M_VDD_TPU"])
    before = source.read().energy_j
    swapped = ODPM_MAIN.replace("[S10M_VDD_TPU], 3212245", "[S10M_VDD_TPU], 1000")
    (tmp_path / "sys/bus/iio/devices/iio:device0/energy_value").write_text(swapped)
    assert source.read().energy_j == pytest.approx(before + 0.001)
    assert source.describe()["channel_restarts"] == 1


def test_odpm_unknown_rail_names_the_available_ones(tmp_path):
    odpm(tmp_path)
    with pytest.raises(TelemetryUnavailable, match=r"available: .*S10M_VDD_TPU"):
        make_source("android_odpm", root=str(tmp_path), rails=["VDD_NOPE"])


# --- ina3221 ---------------------------------------------------------------------------------

ORIN_NANO = {
    1: ("VDD_IN", 5000, 880),  # 4.4 W
    2: ("VDD_CPU_GPU_CV", 5000, 240),
    3: ("VDD_SOC", 5000, 260),
    7: ("sum of shunt voltages", 120, None),
}


def test_ina3221_jetpack5_uses_vdd_in(tmp_path):
    ina3221_hwmon(tmp_path, "1-0040", ORIN_NANO)
    source = make_source("ina3221", root=str(tmp_path))
    assert source.read().power_w == pytest.approx(4.4)
    info = source.describe()
    assert info["layout"] == "hwmon"
    assert info["total"] == "rail VDD_IN"
    assert [r["name"] for r in info["rails"]] == ["VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"]
    assert any("in7_label (sum channel)" in s for s in info["skipped"])


def test_ina3221_jetpack5_sums_rails_skipping_nc_and_the_sum_channel(tmp_path):
    # AGX Orin: two monitors, no VDD_IN rail, unconnected channels labelled NC.
    ina3221_hwmon(
        tmp_path,
        "1-0040",
        {
            1: ("VDD_GPU_SOC", 19000, 200),  # 3.8 W
            2: ("VDD_CPU_CV", 19000, 100),  # 1.9 W
            3: ("VIN_SYS_5V0", 5000, 900),  # 4.5 W
            7: ("sum of shunt voltages", 360, None),
        },
    )
    ina3221_hwmon(
        tmp_path,
        "1-0041",
        {
            1: ("NC", 0, 7777),
            2: ("VDDQ_VDD2_1V8AO", 5000, 80),  # 0.4 W
            3: ("NC", 0, 7777),
            7: ("sum of shunt voltages", 80, None),
        },
        hwmon=2,
    )
    source = make_source("ina3221", root=str(tmp_path))
    assert source.read().power_w == pytest.approx(3.8 + 1.9 + 4.5 + 0.4)
    info = source.describe()
    assert info["total"].startswith("sum of rails VDD_GPU_SOC")
    assert "NC" not in [r["name"] for r in info["rails"]]
    assert sum("(NC)" in s for s in info["skipped"]) == 2


@pytest.mark.parametrize(
    "label, unconnected",
    [("NC", True), ("NC_2", True), ("rail nc", True), ("VDD_SYNC", False), ("VDD_IN", False)],
)
def test_ina3221_nc_labels(label, unconnected):
    assert ina_unconnected(label) is unconnected


def test_ina3221_jetpack4_iio_layout(tmp_path):
    ina3221_iio(
        tmp_path, "6-0040", [("POM_5V_IN", 4321), ("POM_5V_GPU", 800), ("POM_5V_CPU", 1200)]
    )
    source = make_source("ina3221", root=str(tmp_path))
    assert source.read().power_w == pytest.approx(4.321)
    info = source.describe()
    assert info["layout"] == "iio" and info["total"] == "rail POM_5V_IN"


def test_ina3221_jetpack4_without_an_input_rail_sums(tmp_path):
    ina3221_iio(tmp_path, "1-0040", [("GPU", 1500), ("CPU", 2500), ("SOC", 1000)])
    source = make_source("ina3221", root=str(tmp_path))
    assert source.read().power_w == pytest.approx(5.0)


# --- rapl ------------------------------------------------------------------------------------


def test_rapl_reads_the_counter_and_flags_wraps(tmp_path):
    folder = rapl(tmp_path, 262143000000)
    source = make_source("rapl", root=str(tmp_path))
    assert source.max_energy_range_j == pytest.approx(262143.328850)
    first = source.read()
    assert first.energy_j == pytest.approx(262143.0) and first.power_w is None
    assert first.wrapped is False
    write(folder / "energy_uj", 262143300000)
    assert source.read().wrapped is False
    write(folder / "energy_uj", 1500000)  # past max_energy_range_uj: the counter wrapped
    wrapped = source.read()
    assert wrapped.wrapped is True and wrapped.energy_j == pytest.approx(1.5)
    write(folder / "energy_uj", 2500000)
    assert source.read().wrapped is False
    assert source.describe()["max_energy_range_uj"] == 262143328850


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a mode-000 file anyway")
def test_rapl_permission_denied_by_mode(tmp_path):
    folder = rapl(tmp_path, 1000)
    (folder / "energy_uj").chmod(0)
    with pytest.raises(TelemetryUnavailable) as caught:
        make_source("rapl", root=str(tmp_path))
    assert str(caught.value) == RAPL_PERMISSION_HINT


def test_rapl_permission_denied_simulated(tmp_path, monkeypatch):
    # Kernels since CVE-2020-8694 make energy_uj mode 0400 root. A mode-000 file cannot show
    # that when the tests run as root (root reads it anyway), so here the read itself is made to
    # fail with EACCES, exactly what open(2) returns to an unprivileged user.
    rapl(tmp_path, 1000)
    real = sysfs.read_bytes

    def denied(path):
        if path.endswith("energy_uj"):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(sysfs, "read_bytes", denied)
    with pytest.raises(TelemetryUnavailable) as caught:
        make_source("rapl", root=str(tmp_path))
    message = str(caught.value)
    assert "CVE-2020-8694" in message and "chmod o+r" in message and "\n" not in message


# --- make_source: missing sources and auto ---------------------------------------------------


@pytest.mark.parametrize(
    "kind, missing",
    [
        ("android_fuel_gauge", "power_supply/battery/current_now"),
        ("android_odpm", "iio:device*/energy_value"),
        ("ina3221", "/sys/bus/i2c/devices"),
        ("rapl", "intel-rapl:0/energy_uj"),
    ],
)
def test_missing_source_raises_one_line_reason(tmp_path, kind, missing):
    with pytest.raises(TelemetryUnavailable) as caught:
        make_source(kind, root=str(tmp_path))
    message = str(caught.value)
    assert missing in message and kind in message
    assert "\n" not in message


def test_unknown_kind_is_unavailable(tmp_path):
    with pytest.raises(TelemetryUnavailable, match="unknown energy source 'joulescope'"):
        make_source("joulescope", root=str(tmp_path))


def test_zero_voltage_gauge_is_not_a_valid_reading(tmp_path):
    fuel_gauge(tmp_path, -450000, 0)
    with pytest.raises(TelemetryUnavailable, match="no power or energy"):
        make_source("android_fuel_gauge", root=str(tmp_path))


def test_auto_probes_odpm_first(tmp_path):
    odpm(tmp_path)
    fuel_gauge(tmp_path, -450000, 3850000)
    rapl(tmp_path, 1000)
    source = make_source("auto", root=str(tmp_path))
    assert source.kind == "android_odpm"
    assert source.describe()["auto_skipped"] == {}


def test_auto_falls_back_in_order_and_says_why(tmp_path):
    fuel_gauge(tmp_path, -450000, 0)  # present but gives no valid reading
    ina3221_hwmon(tmp_path, "1-0040", ORIN_NANO)
    rapl(tmp_path, 1000)
    source = make_source("auto", root=str(tmp_path))
    assert source.kind == "ina3221"
    assert source.read().power_w == pytest.approx(4.4)
    info = source.describe()
    assert info["auto"] is True
    assert list(info["auto_skipped"]) == ["android_odpm", "android_fuel_gauge"]
    assert "no power or energy" in info["auto_skipped"]["android_fuel_gauge"]


def test_auto_with_nothing_is_none_with_reasons(tmp_path):
    source = make_source("auto", root=str(tmp_path))
    assert source.kind == "none"
    reading = source.read()
    assert reading.power_w is None and reading.energy_j is None
    info = source.describe()
    assert list(info["reasons"]) == list(AUTO_ORDER)
    assert info["reason"].startswith("no energy source: android_odpm:")


# --- Sampler ---------------------------------------------------------------------------------


def test_sampler_records_a_change_between_marks(tmp_path):
    battery = fuel_gauge(tmp_path, -450000, 3850000, usb=0)
    cpus_and_zones(tmp_path)
    source = make_source("android_fuel_gauge", root=str(tmp_path))
    sampler = Sampler(source, period_s=0.005, cpus=[0, 4], zone_names=["cpu-*"], root=str(tmp_path))
    go, written = threading.Event(), threading.Event()

    def load_step():  # the "inference" starts: the battery current doubles
        go.wait(WAIT_S)
        replace(battery / "current_now", -900000)
        written.set()

    writer = threading.Thread(target=load_step)
    writer.start()
    sampler.start()
    assert sampler.running
    assert sampler.wait_samples(3, timeout=WAIT_S)
    start = sampler.mark("window_start")
    go.set()
    assert written.wait(WAIT_S)
    end = sampler.mark("window_end")
    assert sampler.wait_samples(sampler.samples + 3, timeout=WAIT_S)
    trace = sampler.stop()
    writer.join(WAIT_S)

    assert not sampler.running
    assert trace["schema"] == "edgebench.telemetry/1"
    assert trace["marks"] == {"window_start": start, "window_end": end}
    n = trace["samples"]
    assert n >= 6 and len(trace["t_perf_ns"]) == len(trace["power_w"]) == n
    assert trace["t_perf_ns"] == sorted(trace["t_perf_ns"])
    low, high = 0.450 * 3.85, 0.900 * 3.85
    # the three samples counted before window_start were read before the change ...
    assert trace["power_w"][:3] == [pytest.approx(low)] * 3
    # ... and every sample started after window_end reads the new value
    after = [p for t, p in zip(trace["t_perf_ns"], trace["power_w"], strict=True) if t > end]
    assert len(after) >= 3 and after == [pytest.approx(high)] * len(after)
    assert all(p in (pytest.approx(low), pytest.approx(high)) for p in trace["power_w"])
    assert trace["energy_j"] is None
    assert trace["charging"] == [False] * n
    assert trace["freq_khz"] == {"0": [1800000] * n, "4": [2400000] * n}
    assert trace["temp_c"] == {"cpu-1-0-usr": [45.0] * n, "cpu-1-1-usr": [47.25] * n}
    assert trace["sample_cost_us"] > 0
    assert trace["truncated"] is False and trace["errors"] == []
    assert trace["source"]["kind"] == "android_fuel_gauge"
    assert trace["source"]["raw_sign_counts"]["negative"] >= n
    assert json.loads(json.dumps(trace)) == trace


def test_sampler_marks_counter_wraps(tmp_path):
    folder = rapl(tmp_path, 262143000000)
    source = make_source("rapl", root=str(tmp_path))
    sampler = Sampler(source, period_s=0.005, cpus=[], root=str(tmp_path)).start()
    assert sampler.wait_samples(2, timeout=WAIT_S)
    replace(folder / "energy_uj", 1000000)
    assert sampler.wait_samples(sampler.samples + 2, timeout=WAIT_S)
    trace = sampler.stop()
    energy = trace["energy_j"]
    first_low = next(i for i, e in enumerate(energy) if e < 10)
    assert trace["wrapped_at"] == [first_low]
    assert trace["max_energy_range_j"] == pytest.approx(262143.32885)
    assert trace["power_w"] is None and trace["charging"] is None


def test_sampler_caps_memory_and_floors_the_period(tmp_path):
    sampler = Sampler(None, period_s=0.0001, cpus=[], root=str(tmp_path), max_samples=3)
    assert sampler.period_s == MIN_PERIOD_S
    sampler.start()
    assert sampler.wait_samples(4, timeout=WAIT_S) is False  # it ends by itself at the cap
    trace = sampler.stop()
    assert trace["samples"] == 3 and trace["truncated"] is True
    assert trace["source"]["kind"] == "none"
    assert trace["power_w"] is None and trace["energy_j"] is None


def test_sampler_survives_read_errors(tmp_path):
    battery = fuel_gauge(tmp_path, -450000, 3850000)
    source = make_source("android_fuel_gauge", root=str(tmp_path))
    sampler = Sampler(source, period_s=0.005, cpus=[7], root=str(tmp_path)).start()
    assert sampler.wait_samples(2, timeout=WAIT_S)
    replace(battery / "current_now", "garbage")
    assert sampler.wait_samples(sampler.samples + 2, timeout=WAIT_S)
    trace = sampler.stop()
    assert trace["power_w"][0] == pytest.approx(0.450 * 3.85)
    assert trace["power_w"][-1] is None
    assert trace["freq_khz"] == {"7": [None] * trace["samples"]}  # no cpufreq for cpu7
    assert len(trace["errors"]) == 1 and "invalid literal" in trace["errors"][0]


# --- idle_baseline and read_state ------------------------------------------------------------


def test_idle_baseline_of_constant_power(tmp_path):
    fuel_gauge(tmp_path, -300000, 4000000)
    source = make_source("android_fuel_gauge", root=str(tmp_path))
    baseline = idle_baseline(source, seconds=0.1, period_s=0.01)
    assert baseline["power_w"] == pytest.approx(1.2)
    assert baseline["samples"] >= 2
    assert baseline["period_s"] == 0.01 and baseline["seconds"] >= 0.1
    assert baseline["charging"] is False


class RampCounter(EnergySource):
    """An energy counter at constant power that wraps at ``max_energy_range_j``."""

    kind = "test_counter"

    def __init__(self, watts: float, max_range_j: float) -> None:
        self.watts = watts
        self.max_energy_range_j = max_range_j
        self.previous = None

    def describe(self):
        return {"kind": self.kind}

    def read(self):
        t_ns = time.monotonic_ns()
        value = math.fmod(self.watts * t_ns / 1e9, self.max_energy_range_j)
        wrapped = self.previous is not None and value < self.previous
        self.previous = value
        return Reading(t_ns, None, value, None, wrapped)


@pytest.mark.alone
def test_idle_baseline_from_a_wrapping_counter():
    # 2.5 W wraps a 0.5 J counter every 200 ms: 0.5 s of sampling crosses two or three wraps.
    source = RampCounter(2.5, 0.5)
    baseline = idle_baseline(source, seconds=0.5, period_s=0.01)
    assert baseline["method"] == "energy counter difference / time"
    assert baseline["power_w"] == pytest.approx(2.5, rel=1e-6)


def test_read_state_snapshot(tmp_path):
    cpus_and_zones(tmp_path)
    state = read_state(str(tmp_path), cpus=None, zone_names=["cpu-*", "battery"])
    assert state["cpus"] == {
        "0": {
            "governor": "schedutil",
            "cur_khz": 1800000,
            "max_khz": 1800000,
            "min_khz": 300000,
            "scaling_max_khz": 1800000,
            "scaling_min_khz": 600000,
        },
        "4": {
            "governor": "schedutil",
            "cur_khz": 2400000,
            "max_khz": 2850000,
            "min_khz": 300000,
            "scaling_max_khz": 2850000,
            "scaling_min_khz": 600000,
        },
    }
    assert state["temp_c"] == {"cpu-1-0-usr": 45.0, "battery": 31.5, "cpu-1-1-usr": 47.25}


def test_zones_are_capped_and_duplicate_types_kept_apart(tmp_path):
    for index in range(20):
        folder = tmp_path / f"sys/class/thermal/thermal_zone{index}"
        write(folder / "type", "cpu-thermal" if index < 2 else f"zone{index}")
        write(folder / "temp", 40000 + index)
    zones = find_zones(str(tmp_path), [])
    assert len(zones) == MAX_ZONES
    assert [key for key, _ in zones[:3]] == ["cpu-thermal", "cpu-thermal@thermal_zone1", "zone2"]
    state = read_state(str(tmp_path), cpus=[], zone_names=["cpu-thermal"])
    assert state["temp_c"] == {"cpu-thermal": 40.0, "cpu-thermal@thermal_zone1": 40.001}
