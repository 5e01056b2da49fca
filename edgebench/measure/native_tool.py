"""Cells on devices without Python: the framework's own benchmark binary, via an adapter."""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import TYPE_CHECKING

from edgebench.analysis.energy import analyze
from edgebench.measure.native_telemetry import build_trace, plan_sampler, wrap_command
from edgebench.results.records import Record
from edgebench.runners.native import NATIVE_TOOLS, NativeCell, NativeParseError, NativeResult

if TYPE_CHECKING:
    from edgebench.lab.remote import RemoteDevice
    from edgebench.planning.cells import Cell


class NativeRunError(Exception):
    """The native cell could not be run; the message names the tool and the fix."""


def _adapter(cell: Cell, device: RemoteDevice):
    cls = NATIVE_TOOLS.get(cell.framework)
    if cls is None:
        raise NativeRunError(f"no native benchmark tool is known for {cell.framework}")
    if cell.framework == "tnn":
        return cls(android=device.transport.kind == "adb")
    return cls()


def deploy_binary(device: RemoteDevice, binary: str) -> str:
    """Push the user's binary from the lab's native_bin folder; returns its device path."""
    folder = device.native_bin
    if folder is None:
        raise NativeRunError(
            f"device {device.name} runs native tools but its lab entry has no native_bin folder"
        )
    local = Path(folder) / binary
    if not local.is_file():
        raise NativeRunError(f"{binary} is not in {folder} (native_bin of device {device.name})")
    remote = device.path("bin", binary)
    device.deploy([(local, remote)])
    device.transport.run(["chmod", "755", remote], timeout=30)
    return remote


def run_native_cell(cell: Cell, device: RemoteDevice, model_path: str, base: Record) -> Record:
    """Run one cell with the framework's benchmark binary and fill ``base`` from its output."""
    adapter = _adapter(cell, device)
    binary = deploy_binary(device, adapter.binary)
    native_cell = NativeCell(
        model_path=model_path,
        model_dir=posixpath.dirname(model_path),
        threads=cell.threads,
        warmup=cell.timing.warmup,
        iterations=cell.timing.iterations,
        cores=cell.cores,
        precision=cell.precision,
        input_shapes={i["name"]: list(i["shape"]) for i in cell.inputs},
    )
    if adapter.needs_logcat():
        device.transport.shell(adapter.clear_logcat_command(), timeout=30)
    tool_line = adapter.shell_command(binary, native_cell, pid_file=device.pid_file)
    sampling = _plan_telemetry(cell, device)
    if sampling is not None:
        sampler, settings = sampling
        baseline_s = settings.baseline_s if sampler.source != "none" else 0.0
        tool_line = wrap_command(
            tool_line,
            sampler,
            device.path("telemetry"),
            period_s=settings.period_s,
            baseline_s=baseline_s,
            sync_marker=settings.sync_marker,
        )
    command = device.run_measuring(tool_line, cell.timeout_s)
    if command.timed_out:
        raise NativeRunError(f"{adapter.binary} timed out after {cell.timing.timeout_s:.0f} s")
    logcat = ""
    if adapter.needs_logcat():
        logcat = device.transport.shell(adapter.logcat_command(), timeout=30).stdout
    try:
        result = adapter.parse(command.stdout, command.stderr, logcat, model_path=model_path)
    except NativeParseError as exc:
        tail = (command.stderr or command.stdout).strip().splitlines()[-1:] or ["no output"]
        raise NativeRunError(
            f"{exc} (exit {command.returncode}; last line: {tail[0][:200]})"
        ) from exc
    fill_record(base, result)
    if sampling is not None:
        _attach_native_energy(base, cell, device, sampling[0], sampling[1].period_s, result)
    return base


def _plan_telemetry(cell: Cell, device: RemoteDevice):
    settings = cell.telemetry
    if settings is None or not settings.enabled:
        return None
    profile = device.profile
    source = settings.energy_source or (profile.energy_source if profile else "auto")
    zones = list(profile.thermal_zones) if profile else []
    return plan_sampler(device.transport, source, list(cell.cores or []), zones), settings


def _attach_native_energy(
    record: Record, cell: Cell, device: RemoteDevice, sampler, period_s: float, result
) -> None:
    work = device.path("telemetry")
    files = device.transport.read_many(
        [posixpath.join(work, "trace.txt"), posixpath.join(work, "marks.txt")]
    )
    trace = build_trace(
        sampler,
        files[posixpath.join(work, "trace.txt")] or "",
        files[posixpath.join(work, "marks.txt")] or "",
        period_s,
    )
    analysis = analyze(
        trace,
        record.n_samples,
        max_freq_khz=device.facts().max_freq_khz if not device.unreachable else {},
        pinned_cpus=cell.cores,
        temp_limit_c=(cell.telemetry.temp_limit_c if cell.telemetry else None)
        or (device.profile.max_temp_c if device.profile else None),
    )
    record.telemetry = trace
    record.energy = analysis.as_dict()
    record.avg_power_w = analysis.avg_power_w
    record.energy_flags = list(analysis.flags)
    if analysis.unavailable:
        record.energy_flags.append(f"energy unavailable: {analysis.unavailable}")
    elif analysis.active_power_w is not None and result.avg_ms:
        # The window is the tool's whole run (load and warm-up too): power x avg latency.
        record.energy_mj_per_inf = analysis.active_power_w * result.avg_ms
        record.energy["energy_mj_per_inf"] = record.energy_mj_per_inf
        record.energy_flags.append(
            "native tool: energy/inference = (mean power - idle) x the tool's average latency"
        )


def fill_record(record: Record, result: NativeResult) -> None:
    """Only what the tool printed: no percentile is computed from min/max/avg."""
    latency = {
        "min": result.min_ms,
        "p50": result.median_ms,
        "mean": result.avg_ms,
        "std": result.std_ms,
    }
    record.latency_ms = {k: v for k, v in latency.items() if v is not None} or None
    record.n_samples = result.count or 0
    record.throughput_ips = result.throughput_ips or (
        1000.0 / result.avg_ms if result.avg_ms else None
    )
    record.first_inference_ms = result.first_ms
    record.load_ms = result.init_ms
    record.peak_rss_mb = result.memory_mb
    record.native = {
        "tool": result.tool,
        "tool_version": result.tool_version,
        "stats_available": list(result.stats_available),
        "max_ms": result.max_ms,
        "raw_lines": result.raw_lines[-20:],
    }
    record.framework_version = result.tool_version
    if result.median_ms is None:
        record.warnings.append(
            f"{result.tool} prints only {', '.join(result.stats_available)}: no percentiles "
            "(the Python runner records per-iteration samples)"
        )
    record.warnings.append("no output check: native tools do not return outputs here")


__all__ = ["NativeRunError", "run_native_cell"]
