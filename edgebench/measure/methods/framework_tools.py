"""Measurement through the framework tools (a framework's own benchmark binary), for devices
without Python: the binary from the lab's ``tools_bin`` folder is deployed, its adapter
(edgebench.framework_tools) builds the command line and parses what the tool prints, and
telemetry is sampled by a device shell loop beside it.

An accelerator cell (``cell.backend``) runs with the tool's own switch for it; what the tool says
about the backend decides the record: the device it ran on (``accelerator``), a fallback to the
CPU (``unsupported``/``fallback``, no latency) or, without a result, the tool's words that the
backend is not there (``unsupported``)."""

from __future__ import annotations

import dataclasses
import posixpath
from pathlib import Path
from typing import Any

from edgebench.compute_backends import CPU
from edgebench.framework_tools import ADAPTERS, ToolAdapter, ToolCell, ToolParseError
from edgebench.framework_tools.accelerator import BackendReport, tool_refusal
from edgebench.framework_tools.generative import ToolGeneration
from edgebench.framework_tools.site import ToolNotFound
from edgebench.lab.device import Device
from edgebench.lab.remote import RemoteDevice, local_sha256
from edgebench.lab.runner_kinds import RunnerKind
from edgebench.measure.breakdowns import with_op_profile
from edgebench.measure.methods.base import (
    Visit,
    model_files,
    note_whole_inference,
    whole_inference_refusal,
)
from edgebench.measure.native_telemetry import plan_sampler, read_trace, wrap_command
from edgebench.measure.quantized_check import quant_info
from edgebench.measure.records import (
    failed_record,
    new_record,
    record_from_native,
    refuse_unreported_accelerator,
    with_energy,
)
from edgebench.planning.cells import Cell, Verdict
from edgebench.quantization import QUANTIZED_PRECISIONS
from edgebench.results.breakdown_parts import OpProfile
from edgebench.results.generation_part import Generation
from edgebench.results.record_warnings import INPUT_NOT_USED, OP_PROFILE_FAILED
from edgebench.results.records import Record
from edgebench.statuses import ErrorKind, Status


class ToolRunError(Exception):
    """The native cell could not be run; the message names the tool and the fix."""


class FrameworkTools:
    kind = RunnerKind.FRAMEWORK_TOOLS

    def availability(self, device: Device, framework: str, backend: str = CPU) -> Verdict | None:
        tool = ADAPTERS.get(framework)
        if tool is None:
            return (
                Status.UNSUPPORTED,
                ErrorKind.UNSUPPORTED,
                f"no native benchmark tool for {framework}",
            )
        refusal = backend_refusal(device, framework, backend)
        if refusal is not None:
            return (Status.UNSUPPORTED, ErrorKind.UNSUPPORTED, refusal)
        folder = getattr(device, "tools_bin", None)
        if tool.installed_on_device:
            return None  # looked for on the device when the cell runs
        if folder is None or not (Path(folder) / tool.binary).is_file():
            where = folder or "(no tools_bin in the lab entry)"
            how = f" ({tool.how_to_get})" if tool.how_to_get else ""
            return (
                Status.SKIPPED,
                ErrorKind.NOT_INSTALLED,
                f"{tool.binary} not found in {where} for {device.name}; copy the {framework} "
                f"benchmark binary built for the device there{how}",
            )
        return None

    def visit(self, cell: Cell, device: Device, visit: Visit) -> Record:
        assert isinstance(device, RemoteDevice), "framework tools run on ADB or SSH devices"
        refusal = (
            whole_inference_refusal(cell, "a native benchmark tool")
            or backend_refusal(device, cell.framework, cell.backend)
            or precision_refusal(cell)
            or workload_refusal(cell)
        )
        if refusal:
            return _not_run(visit.run_id, cell, ErrorKind.UNSUPPORTED, refusal)
        model_path = device.stage_model(model_files(cell))
        try:
            record = _run(cell, device, model_path, visit.run_id)
        except ToolNotFound as exc:
            return _not_run(visit.run_id, cell, ErrorKind.UNSUPPORTED, str(exc))
        except ToolRunError as exc:
            return failed_record(visit.run_id, cell, ErrorKind.TOOL_FAILED, str(exc))
        record = note_whole_inference(record, cell, "a native benchmark tool")
        if visit.checks.input is not None:
            record = record.with_warnings(INPUT_NOT_USED.make(runner="a native benchmark tool"))
        return record


def _android(device: Device) -> bool:
    transport = getattr(device, "transport", None)
    return getattr(transport, "kind", None) == "adb"


def precision_refusal(cell: Cell) -> str | None:
    """Why the framework's own tool cannot run the cell's precision (None: it can)."""
    tool = ADAPTERS.get(cell.framework)
    if tool is None or cell.precision in tool.precisions:
        return None
    return (
        f"{tool.binary} runs {', '.join(tool.precisions)} cells, not {cell.precision}; measure "
        f"{cell.precision} with the Python runner or edgebench-native (the lab's runner)"
    )


def workload_refusal(cell: Cell) -> str | None:
    """Why the framework's own tool cannot run the cell's generative workload (None: it can)."""
    tool = ADAPTERS.get(cell.framework)
    return tool.workload_refusal(cell.generation) if tool is not None else None


def backend_refusal(device: Device, framework: str, backend: str) -> str | None:
    """Why the framework's own tool cannot run ``backend`` on ``device`` (None: it can try)."""
    return tool_refusal(framework, backend, android=_android(device), device=device.name)


def _adapter(cell: Cell, device: RemoteDevice) -> ToolAdapter:
    cls = ADAPTERS.get(cell.framework)
    if cls is None:
        raise ToolRunError(f"no native benchmark tool is known for {cell.framework}")
    return cls.for_cell(cell.backend, _android(device))


@dataclasses.dataclass(frozen=True)
class DeviceToolSite:
    """A remote device as the tool adapters' hooks see it (framework_tools/site.py)."""

    device: RemoteDevice

    @property
    def name(self) -> str:
        return self.device.name

    @property
    def android(self) -> bool:
        return _android(self.device)

    def shell(self, script: str, timeout: float) -> str:
        return self.device.transport.shell(script, timeout=timeout).stdout

    def path(self, *parts: str) -> str:
        return self.device.path(*parts)

    def read(self, path: str) -> str | None:
        return self.device.transport.read_many([path]).get(path)

    def has_local_binary(self, binary: str) -> bool:
        folder = self.device.tools_bin
        return folder is not None and (Path(folder) / binary).is_file()

    def deploy(self, binary: str) -> str:
        return deploy_binary(self.device, binary)

    def local_sha256(self, path: Path) -> str:
        return local_sha256(path)


def deploy_binary(device: RemoteDevice, binary: str) -> str:
    """Push the user's binary from the lab's tools_bin folder; returns its device path."""
    folder = device.tools_bin
    if folder is None:
        raise ToolRunError(
            f"device {device.name} runs the framework tools but its lab entry has no tools_bin "
            "folder"
        )
    local = Path(folder) / binary
    if not local.is_file():
        raise ToolRunError(f"{binary} is not in {folder} (tools_bin of device {device.name})")
    remote = device.path("bin", binary)
    device.deploy_executable(local, remote)
    return remote


def _run(cell: Cell, device: RemoteDevice, model_path: str, run_id: str) -> Record:
    site = DeviceToolSite(device)
    adapter = _adapter(cell, device)
    binary = adapter.locate(site)
    native_cell = ToolCell(
        model_path=model_path,
        model_dir=posixpath.dirname(model_path),
        threads=cell.threads,
        warmup=cell.timing.warmup,
        iterations=cell.timing.iterations,
        cores=cell.cores,
        precision=cell.precision,
        input_shapes={i["name"]: list(i["shape"]) for i in cell.inputs},
        backend=cell.backend,
        cuda_graph=bool(getattr(cell, "cuda_graph", False)),
        generation=cell.generation,
    )
    adapter = adapter.prepare(site, binary, native_cell, model_files(cell)[0])
    if (clear_logcat := adapter.clear_logcat_command()) is not None:
        device.transport.shell(clear_logcat, timeout=30)
    tool_line = adapter.shell_command(binary, native_cell, pid_file=device.pid_file)
    settings = cell.telemetry
    sampler = None
    if settings is not None:
        profile = device.profile
        source = settings.energy_source or (profile.energy_source if profile else "auto")
        zones = list(profile.thermal_zones) if profile else []
        sampler = plan_sampler(device.transport, source, list(cell.cores or []), zones)
        tool_line = wrap_command(
            tool_line,
            sampler,
            device.path("telemetry"),
            period_s=settings.period_s,
            baseline_s=settings.baseline_s if sampler.source != "none" else 0.0,
            sync_marker=settings.sync_marker,
        )
    command = device.run_measuring(tool_line, cell.timeout_s)
    if command.timed_out:
        raise ToolRunError(f"{adapter.binary} timed out after {cell.timing.timeout_s:.0f} s")
    logcat = ""
    if (dump_logcat := adapter.logcat_command()) is not None:
        logcat = device.transport.shell(dump_logcat, timeout=30).stdout
    report = adapter.backend_report(native_cell, command.stdout, command.stderr, logcat)
    try:
        result = adapter.parse(command.stdout, command.stderr, logcat, model_path=model_path)
    except ToolParseError as exc:
        if report.refusal is not None:
            return _not_run(run_id, cell, ErrorKind.UNSUPPORTED, report.refusal)
        tail = (command.stderr or command.stdout).strip().splitlines()[-1:] or ["no output"]
        said = getattr(adapter, "failure_reason", lambda *_: None)(command.stdout, command.stderr)
        raise ToolRunError(
            f"{exc} (exit {command.returncode}; {said or 'last line: ' + tail[0][:200]})"
        ) from exc
    adapter.collect(site, result)
    if report.fallback is not None:
        return _not_run(run_id, cell, ErrorKind.FALLBACK, _fallback_reason(cell, report))
    record = record_from_native(run_id, cell, result)
    if result.generation is not None:
        record = dataclasses.replace(record, generation=generation_of_tool(result.generation))
    if report.run is not None:
        record = record.with_part("accelerator", report.run)
    record = refuse_unreported_accelerator(record)
    if cell.precision in QUANTIZED_PRECISIONS:
        record = dataclasses.replace(record, quant=quant_info(cell))
    if sampler is not None and settings is not None:
        trace = read_trace(device.transport, sampler, device.path("telemetry"), settings.period_s)
        record = with_energy(record, cell, trace, tool_avg_ms=result.avg_ms or 0.0)
    iterations = int(getattr(cell, "profile_ops", 0) or 0)
    if iterations > 0:
        record = _with_op_profile(record, cell, device, adapter, binary, native_cell, iterations)
    return record


def generation_of_tool(figures: ToolGeneration) -> Generation:
    """A generative cell's record part from what its tool measured (the same names)."""
    return Generation(**dataclasses.asdict(figures))


def _not_run(run_id: str, cell: Cell, kind: ErrorKind, reason: str) -> Record:
    """An accelerator cell the tool did not measure there: ``unsupported``, no latency."""
    return new_record(run_id, cell, Status.UNSUPPORTED, error=reason, error_kind=kind)


def _fallback_reason(cell: Cell, report: BackendReport) -> str:
    return f"asked for {cell.engine}, the tool ran on the CPU: {report.fallback}"


def _with_op_profile(
    record: Record,
    cell: Cell,
    device: RemoteDevice,
    adapter: Any,
    binary: str,
    native_cell: ToolCell,
    iterations: int,
) -> Record:
    """``record`` with its op profile (--profile ops): the tool runs again with its op
    profiler, so the profiler's overhead never reaches the timed record; a failure costs only
    the profile (a warning says why)."""
    parse = getattr(adapter, "parse_op_profile", None)
    if parse is None:
        reason = adapter.no_op_profile or f"{adapter.binary} has no per-operator times"
        return dataclasses.replace(record, op_profile=OpProfile.missing(reason))
    profiled = dataclasses.replace(
        native_cell, warmup=1, iterations=iterations, profile_ops=True, output_file=None
    )
    if (clear_logcat := adapter.clear_logcat_command()) is not None:
        device.transport.shell(clear_logcat, timeout=30)
    line = adapter.shell_command(binary, profiled, pid_file=device.pid_file)
    command = device.run_measuring(line, cell.timeout_s)
    if command.timed_out:
        problem = f"{adapter.binary} timed out after {cell.timeout_s:.0f} s"
    else:
        logcat = ""
        if adapter.needs_logcat():
            logcat = device.transport.shell(adapter.logcat_command(), timeout=30).stdout
        try:
            return with_op_profile(record, parse(command.stdout, command.stderr, logcat))
        except ToolParseError as exc:
            problem = f"{exc} (exit {command.returncode})"
    missing = OpProfile.missing(f"op profiling failed: {problem}")
    failed = dataclasses.replace(record, op_profile=missing)
    return failed.with_warnings(OP_PROFILE_FAILED.make(problem=problem))
