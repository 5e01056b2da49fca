"""Measurement through edgebench's own static binary (runners/native_runner/, built by
`edgebench runners build`): the Python runner's protocol, raw samples, stages, N instances,
shape changes, per-operator profiles and output check on a device without Python; telemetry
comes from the shell loop beside it, and the binary marks its own timed window in that loop's
files."""

from __future__ import annotations

import posixpath
from typing import Any

from edgebench.builds.sources import FRAMEWORKS as NATIVE_FRAMEWORKS
from edgebench.lab.device import Device
from edgebench.lab.remote import RemoteDevice
from edgebench.lab.runner_kinds import RunnerKind
from edgebench.measure.methods.python_runner import Launched, PythonRunner
from edgebench.measure.native_telemetry import plan_sampler, read_trace, wrap_command
from edgebench.measure.records import with_energy
from edgebench.planning.cells import Cell, Verdict
from edgebench.results.record_warnings import NO_TELEMETRY
from edgebench.results.records import Record
from edgebench.statuses import ErrorKind, Status


class EdgebenchNative(PythonRunner):
    kind = RunnerKind.EDGEBENCH_NATIVE
    # The binary runs one input; a quantized cell's accuracy comes from that one.
    runs_eval_set = False

    def availability(self, device: Device, framework: str) -> Verdict | None:
        facts = device.facts()
        if facts.framework_available(framework):
            return None
        if framework not in NATIVE_FRAMEWORKS:
            return (
                Status.UNSUPPORTED,
                ErrorKind.UNSUPPORTED,
                f"edgebench-native has no {framework} backend (it links "
                f"{' and '.join(NATIVE_FRAMEWORKS)}); measure {framework} with runner = "
                '"python" or "framework-tools"',
            )
        build = device.native_build
        if build is None:
            return (
                Status.SKIPPED,
                ErrorKind.NOT_INSTALLED,
                f"{device.name}: {facts.probe_error or 'no edgebench-native build'}",
            )
        target = build.target.name
        return (
            Status.SKIPPED,
            ErrorKind.NOT_INSTALLED,
            f"{framework} is not built into edgebench-native for {target}; rebuild with "
            f"`edgebench runners build --target {target} --framework {framework}"
            + (" --source mnn=PATH" if framework == "mnn" else "")
            + "`",
        )

    def launch(self, cell: Cell, device: Device, spec: dict[str, Any]) -> Launched:
        settings = cell.telemetry
        spec["telemetry"] = None  # the binary samples nothing itself
        if settings is None:
            return Launched(device.run_runner(spec, cell.cores, cell.timeout_s))
        if not isinstance(device, RemoteDevice):
            outcome = device.run_runner(spec, cell.cores, cell.timeout_s)
            return Launched(
                outcome,
                lambda record: record.with_warnings(
                    NO_TELEMETRY.make(
                        reason="edgebench-native is sampled by a shell loop on ADB and SSH "
                        "devices only"
                    )
                ),
            )
        profile = device.profile
        source = settings.energy_source or (profile.energy_source if profile else "auto")
        zones = list(profile.thermal_zones) if profile else []
        sampler = plan_sampler(device.transport, source, list(cell.cores or []), zones)
        work = device.path("telemetry")
        marks = posixpath.join(work, "marks.txt")
        spec["telemetry"] = {"marks_file": marks, "sync_marker": settings.sync_marker}

        def wrap(line: str) -> str:
            return wrap_command(
                line,
                sampler,
                work,
                period_s=settings.period_s,
                baseline_s=settings.baseline_s if sampler.source != "none" else 0.0,
                sync_marker=settings.sync_marker,
                tool_marks_window=True,
            )

        outcome = device.run_runner(spec, cell.cores, cell.timeout_s, wrap=wrap)

        def finish(record: Record) -> Record:
            trace = read_trace(device.transport, sampler, work, settings.period_s)
            return with_energy(record, cell, trace)

        return Launched(outcome, finish)
