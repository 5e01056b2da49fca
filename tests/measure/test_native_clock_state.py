"""The clock state beside a native tool on the emulated phone (real adb server, the phone's
sysfs a synthetic cpufreq tree with the kernel's layout): the shell line reads the pinned cores'
governors and limits before and after the tool, and a limit the tool's run moved is named."""

from __future__ import annotations

import pytest
from fakes.cpufreq_tree import write_phone_cpus

from edgebench.lab.transports.adb import AdbTarget, AdbTransport
from edgebench.measure.native_telemetry import plan_sampler, read_trace, wrap_command
from edgebench.results.clock_regime import limits_moved


@pytest.mark.parametrize("cores", [[4, 5, 6, 7], []], ids=["pinned", "all"])
def test_snapshots_around_the_tool_name_a_moved_limit(sysfs_phone, cores):
    write_phone_cpus(sysfs_phone.sandbox)
    transport = AdbTransport(
        AdbTarget("emu-phone", sysfs_phone.serial, "127.0.0.1", sysfs_phone.adb_port)
    )
    sampler = plan_sampler(transport, "none", cores, [])
    work = str(sysfs_phone.sandbox / "data" / "local" / "tmp" / "telemetry")
    # The "tool" is a thermal daemon's work: it caps the big cluster while it runs.
    policy = "/sys/devices/system/cpu/cpufreq/policy4"
    cap = f'echo 1500000 > "$EDGEBENCH_SYSFS_ROOT"{policy}/scaling_max_freq'
    line = wrap_command(cap, sampler, work, period_s=0.01, baseline_s=0, sync_marker=None)
    done = transport.shell(line, timeout=60)
    assert done.returncode == 0, done.stderr
    trace = read_trace(transport, sampler, work, 0.01)
    before, after = trace["state_before"], trace["state_after"]
    assert sorted(before["cpus"], key=int) == [str(c) for c in cores or range(8)]
    assert before["cpus"]["4"] == {
        "governor": "schedutil",
        "cur_khz": 2400000,
        "max_khz": 2400000,
        "min_khz": 600000,
        "scaling_max_khz": 2400000,
        "scaling_min_khz": 600000,
    }
    assert after["cpus"]["4"]["scaling_max_khz"] == 1500000
    assert limits_moved(before, after) == ["max freq 2.4 -> 1.5 GHz on cpu4-7"]
