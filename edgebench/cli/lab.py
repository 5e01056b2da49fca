"""Commands about the lab: devices (live status and probed facts) and clean."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from edgebench.cli.app import cli
from edgebench.cli.options import lab_option, setting_option
from edgebench.frameworks import FRAMEWORKS, display_order
from edgebench.lab.accelerator_facts import describe_accelerators
from edgebench.lab.cores import format_cpu_list
from edgebench.lab.inventory import LOCAL, probe_device, resolve_devices
from edgebench.lab.lab_file import load_lab
from edgebench.lab.profiles import compare_clusters
from edgebench.lab.runner_kinds import RunnerKind
from edgebench.lab.transports.base import TransportError


@cli.command(name="devices")
@lab_option
@setting_option(
    "sweep", "devices", dest="names", default=None, help="Only these devices [default: all]."
)
def devices_cmd(lab_path: Path | None, names: list[str] | None) -> None:
    """The lab's devices with live status and what was probed on each."""
    lab = load_lab(lab_path)
    wanted = names or [LOCAL, *lab.devices]
    click.echo(f"lab: {lab.path or 'none found (only the local device)'}")
    for device in resolve_devices(wanted, lab):
        problem = probe_device(device)
        click.echo(f"\n{device.name}  [{device.transport.describe()}]  ", nl=False)
        if problem:
            click.echo("OFFLINE")
            click.echo(f"  {problem}")
            continue
        click.echo("online")
        for line in describe_facts(device):
            click.echo(f"  {line}")


def describe_facts(device) -> list[str]:
    facts = device.facts()
    freq = facts.max_freq_khz
    clusters = ", ".join(
        f"{name} {format_cpu_list(cpus)}"
        + (f" @{freq[cpus[0]] / 1000:.0f} MHz" if cpus and cpus[0] in freq else "")
        for name, cpus in facts.clusters.items()
    )
    available = display_order(n for n, info in facts.frameworks.items() if info.get("available"))
    native = (facts.runner or "").startswith(RunnerKind.EDGEBENCH_NATIVE)
    needs_python = not native and facts.runner != RunnerKind.FRAMEWORK_TOOLS
    python_missing = "not usable: " + (facts.probe_error or "?") if needs_python else "not needed"
    lines = [
        f"model: {facts.model or '?'}   soc: {facts.soc or '?'}   os: "
        f"{facts.os_version or facts.os or '?'}   kernel: {facts.kernel or '?'}",
        f"machine: {facts.machine or '?'}"
        + (" (emulated: latencies are for correctness only)" if facts.emulated else ""),
        f"cpu: {facts.cpu_model or '?'}"
        + (" (the host's CPU, under the emulator)" if facts.emulated else "")
        + f", cpus {format_cpu_list(facts.cpus) or '?'}; "
        f"clusters detected: {clusters or 'one (all cores equal)'}",
        f"governor: {', '.join(facts.governors) or 'unknown'}",
        f"python: {facts.python or python_missing}; frameworks: {', '.join(available) or 'none'}",
    ]
    if facts.runner and facts.runner != "python":
        choice = f" ({facts.runner_choice})" if facts.runner_choice else ""
        problem = f"; not usable: {facts.probe_error}" if native and facts.probe_error else ""
        lines.append(f"runner: {facts.runner}{choice}{problem}")
    lines += routed_elsewhere(device)
    lines += describe_accelerators(facts)
    if facts.emulated and facts.emulation:
        lines.append(f"emulated: {facts.emulation}")
    if device.profile is not None:
        lines.append(f"profile: {device.profile_name}")
        differences = compare_clusters(
            device.profile, facts.clusters, max_freq_khz=facts.max_freq_khz
        )
        lines += [f"  differs from profile: {d}" for d in differences] or [
            "  clusters match the profile"
        ]
    return lines


def routed_elsewhere(device) -> list[str]:
    """A line per framework this device measures with another runner than its own (an "auto"
    device that runs Python sends TNN to its edgebench-native build)."""
    lines = []
    for framework in FRAMEWORKS:
        if framework.native_only is None:
            continue
        choice = device.runner_for(framework.name)
        if choice is not None and choice is not device.runner:
            lines.append(f"{framework.name}: measured by {choice.label()} ({choice.why})")
    return lines


@cli.command()
@lab_option
@setting_option(
    "sweep", "devices", dest="names", default=None, help="Devices to clean.", required=True
)
def clean(lab_path: Path | None, names: list[str]) -> None:
    """Remove the runner, models and outputs edgebench put on devices."""
    lab = load_lab(lab_path)
    failures = 0
    for device in resolve_devices(names, lab):
        try:
            click.echo(f"{device.name}: {device.clean()}")
        except TransportError as exc:
            failures += 1
            click.echo(f"{device.name}: not cleaned: {exc}", err=True)
    if failures:
        sys.exit(1)
