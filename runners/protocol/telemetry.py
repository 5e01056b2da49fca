"""The telemetry vocabulary both sides use: the energy-source kinds a spec, a setting or a
device profile may name, the schema of the sampled trace a result carries, and how a battery
fuel gauge's raw readings are scaled (the runner's source and the host's shell-loop sampler
of edgebench-native cells read the same sysfs files).

Energy sources (the runner's energy_sources.py opens them):

- ``android_fuel_gauge``: battery ``current_now`` x ``voltage_now`` (instantaneous power).
- ``android_odpm``: Pixel on-device power monitor, accumulated energy per rail (a counter).
- ``ina3221``: Jetson power monitor, instantaneous power of the input rail (or the sum of rails).
- ``rapl``: x86 package energy counter, which wraps at ``max_energy_range_uj``.
- ``tegrastats``: a Jetson's ``tegrastats`` child process, the input rail's power (or the sum).
- ``nvml``: an NVIDIA GPU's board energy counter (or power draw), the GPU only.
- ``none``: no energy; frequencies and temperatures are still sampled.
- ``auto``: the first of ``AUTO_ORDER`` that gives a valid reading, else none.

Standard library only, Python 3.8.
"""

#: A result's telemetry trace (sampler.py writes it on the device).
TRACE_SCHEMA = "edgebench.telemetry/1"

#: What ``auto`` tries, in order: the most direct measurement first (on a Jetson the INA3221's
#: sysfs before tegrastats, which reads the same monitors through a child process; the whole
#: machine's RAPL before NVML's GPU board alone).
AUTO_ORDER = ("android_odpm", "android_fuel_gauge", "ina3221", "tegrastats", "rapl", "nvml")
#: Every energy source a spec, a setting or a device profile may name.
SOURCE_KINDS = ("auto", *AUTO_ORDER, "none")

# Unit detection, by magnitude of the raw integer (the kernel ABI says µV/µA; some vendor
# drivers report mV/mA). A phone battery sits at 3-5 V (9 V for two cells) and draws
# 1 mA-10 A.
#: |voltage_now| below this is in V (no known driver does it, but then it cannot be mV or µV).
VOLTAGE_V_BELOW = 100
#: |voltage_now| below this is in mV (3850 = 3.85 V); at or above, µV (3850000 = 3.85 V).
VOLTAGE_MV_BELOW = 100000
#: |current_now| below this is in mA (up to 10 A); at or above, µA (10 mA or more). A µA reading
#: under 10 mA (deep idle, screen off) would be misread as mA: the unit is therefore decided on
#: the first non-zero reading of the source (a benchmark keeps the device awake) and kept; pass
#: ``current_unit`` to override it.
CURRENT_MA_BELOW = 10000

#: Each unit a fuel gauge reports in, in SI units (V, A).
UNIT_SCALE = {"V": 1.0, "mV": 1e-3, "uV": 1e-6, "A": 1.0, "mA": 1e-3, "uA": 1e-6}


def detect_voltage_unit(raw: int) -> str:
    """The unit of a raw ``voltage_now`` reading."""
    value = abs(raw)
    if value < VOLTAGE_V_BELOW:
        return "V"
    if value < VOLTAGE_MV_BELOW:
        return "mV"
    return "uV"


def detect_current_unit(raw: int) -> str:
    """The unit of a raw non-zero ``current_now`` reading."""
    return "mA" if abs(raw) < CURRENT_MA_BELOW else "uA"
