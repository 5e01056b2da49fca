"""Records from measurements: the one place a cell's record is assembled, whichever method
measured it, and the one place telemetry becomes energy figures on a record."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from edgebench import __version__
from edgebench.analysis.energy import analyze
from edgebench.analysis.statistics import latency_stats, stats_warnings, throughput_ips
from edgebench.analysis.sustained import summarize as summarize_sustained
from edgebench.compute_backends import CPU
from edgebench.framework_tools import ToolResult
from edgebench.measure.breakdowns import shape_field, with_breakdowns
from edgebench.measure.generation_record import generation_of, with_token_energy
from edgebench.planning.cells import Cell
from edgebench.planning.modelref import ModelRef
from edgebench.planning.tflite_origin import route_of
from edgebench.results.breakdown_parts import Instances, Stages
from edgebench.results.clock_regime import limits_moved
from edgebench.results.energy_part import unavailable_flag
from edgebench.results.provenance_parts import Artifact, ToolReport
from edgebench.results.record_warnings import (
    CLOCK_LIMITS_MOVED,
    CORES_NOT_APPLIED,
    GOVERNOR_NOT_PERFORMANCE,
    GOVERNOR_NOT_SET,
    NO_OUTPUT_CHECK,
    NO_PERCENTILES,
)
from edgebench.results.records import Record
from edgebench.runners.protocol.run_result import RunResult
from edgebench.runners.protocol.typed_json import write_object
from edgebench.statuses import ErrorKind, Status

#: How much of a failed runner's stderr a record keeps.
STDERR_TAIL_CHARS = 2000


def _kb_to_mb(value: Any) -> float | None:
    return None if value is None else round(float(value) / 1024.0, 3)


def _ns_to_ms(value: Any) -> float | None:
    return None if value is None else float(value) / 1e6


def _artifact_info(cell: Cell) -> Artifact | None:
    artifact = cell.artifact
    if artifact is None:  # the cell runs its model file itself, or did not run
        ran = cell.convert_to is None and cell.verdict is None
        return tflite_route_info(cell.model, None) if ran else None
    manifest = artifact.manifest
    info = Artifact(
        format=artifact.format,
        converter=manifest.get("converter"),
        converter_version=manifest.get("converter_version"),
        cached=artifact.cached,
        convert_s=manifest.get("time_s"),
        files=[{"name": f["name"], "sha256": f["sha256"]} for f in manifest.get("files", [])],
        path=str(artifact.path),
    )
    return tflite_route_info(cell.model, info)


def tflite_route_info(model: ModelRef, info: Artifact | None) -> Artifact | None:
    """``info`` with the route of a model given as a .tflite; a cell that ran its model file
    as it is (the twin on ONNX Runtime, the original on LiteRT) gets a part naming that file."""
    origin = getattr(model, "tflite", None)  # duck-typed models in tests have none
    if origin is None:
        return info
    route = route_of(model, info.converter_version if info is not None else None)
    if info is None and model.path is not None:
        sha256 = origin.sha256 if model.format == "tflite" else origin.twin_sha256
        info = Artifact(
            format=model.format,
            files=[{"name": model.path.name, "sha256": sha256}],
            path=str(model.path.parent),
        )
        if model.format != "tflite":
            info.converter, info.converter_version = "OnnxFromTfliteConverter", origin.reader
    if info is not None:
        info.route, info.tflite_sha256 = route, origin.sha256
        info.twin_sha256, info.twin_dequantized = origin.twin_sha256, origin.dequantized
    return info


def new_record(run_id: str, cell: Cell, status: str, **measured: Any) -> Record:
    """A record with everything the cell itself says (device, model, framework, sweep), and
    the ``measured`` fields given."""
    facts = cell.device.facts
    said: dict[str, Any] = dict(
        run_id=run_id,
        cell_id=cell.cell_id,
        device=cell.device.name,
        model=cell.model.name,
        framework=cell.framework,
        precision=cell.precision,
        precision_requested=cell.precision_requested,
        threads=cell.threads,
        cores=cell.cores_selection,
        status=status,
        concurrency=cell.concurrency,
        backend=cell.backend,
        cuda_graph=cell.cuda_graph,
        model_path=str(cell.model.path) if cell.model.path else None,
        model_sha256=cell.model.sha256,
        inputs=cell.inputs or None,
        device_info=facts.as_dict() if facts else {},
        edgebench_version=__version__,
        artifact=_artifact_info(cell),
        emulated=bool(facts and facts.emulated),
        emulation=facts.emulation if facts else None,
        shape=shape_field(cell, None),
        instances=Instances(cell.instances, cell.instance_mode) if cell.instances > 1 else None,
    )
    return Record(**{**said, **measured})


def failed_record(
    run_id: str, cell: Cell, kind: str, reason: str | None, stderr: str | None = None
) -> Record:
    return new_record(
        run_id,
        cell,
        Status.FAILED,
        error=reason,
        error_kind=kind,
        stderr_tail=(stderr or "")[-STDERR_TAIL_CHARS:] or None,
    )


def record_from_result(run_id: str, cell: Cell, raw: dict[str, Any]) -> Record:
    """Map the runner's result onto a record; statistics are recomputed here. A result that
    does not read as a ``RunResult`` is a failed record naming the field that is wrong."""
    try:
        result = RunResult.from_json(raw)
    except ValueError as exc:
        reason = f"the runner's result is malformed: {exc}"
        return failed_record(run_id, cell, ErrorKind.RUNNER, reason)
    error = result.error
    status = result.status
    if error is not None and error.kind == ErrorKind.NOT_INSTALLED:
        status = Status.SKIPPED
    samples = list(result.samples_ns)
    stats = latency_stats(samples) if status == Status.OK else None
    wall_ns = result.measure_wall_ns
    effective = result.cores_effective
    warnings = stats_warnings(stats, generative=result.generation is not None)
    if cell.cores and effective is not None and sorted(effective) != sorted(cell.cores):
        warnings.append(CORES_NOT_APPLIED.make(asked=cell.cores, effective=effective))
    measured: dict[str, Any] = dict(
        error=error.message if error is not None else None,
        error_kind=error.kind if error is not None else None,
        framework_version=result.framework_version,
        cores_effective=effective,
        samples_ns=samples,
        n_samples=len(samples),
        warmup_samples_ns=list(result.warmup_samples_ns),
        stop_reason=result.stop_reason,
        median_ci=result.median_ci,
        measure_wall_s=None if wall_ns is None else wall_ns / 1e9,
        latency_ms=stats.as_record() if stats else None,
        throughput_ips=throughput_ips(len(samples), wall_ns) if stats else None,
        peak_rss_mb=_kb_to_mb(result.peak_rss_kb),
        rss_before_load_mb=_kb_to_mb(result.rss_before_load_kb),
        load_ms=_ns_to_ms(result.load_ns),
        first_inference_ms=_ns_to_ms(result.first_inference_ns),
        outputs=None if result.outputs is None else [write_object(o) for o in result.outputs],
        cpu_ms_per_inf=_ns_to_ms(result.cpu_ns_per_inference),
        warnings=warnings,
    )
    if result.inputs:
        measured["inputs"] = [write_object(i) for i in result.inputs]
    if result.accelerator is not None:
        measured["accelerator"] = write_object(result.accelerator)  # read by the record
    if result.nvidia is not None:
        measured["nvidia"] = write_object(result.nvidia)
    trace = None if result.telemetry is None else write_object(result.telemetry)
    if result.generation is not None:
        generation = measured["generation"] = generation_of(result.generation, trace)
        # A generative cell's samples are per generated token: its throughput is tokens/s.
        measured["throughput_ips"] = generation.decode_tokens_per_s if stats else None
    if status != Status.OK and error is not None and error.detail:
        measured["stderr_tail"] = error.detail[-STDERR_TAIL_CHARS:]
    record = refuse_unreported_accelerator(new_record(run_id, cell, status, **measured))
    record = with_breakdowns(record, cell, result)
    if trace is not None:
        record = with_token_energy(with_energy(record, cell, trace))
    if cell.timing.sustained_s and status == Status.OK:
        record = replace(record, sustained=summarize_sustained(record.samples_ns, trace))
    return record


def refuse_unreported_accelerator(record: Record) -> Record:
    """A measured cell that asked for an accelerator and whose runner did not say which device
    ran it (a runner that does not know the backend, an older one) ran on the CPU as far as
    anyone can tell: never a GPU figure."""
    if record.backend == CPU or record.accelerator is not None or record.status != Status.OK:
        return record
    return replace(
        record,
        status=Status.UNSUPPORTED,
        error_kind=ErrorKind.FALLBACK,
        error=(
            f"asked for {record.framework} on {record.backend}, and the runner reported no "
            "accelerator: treated as a CPU run, not measured"
        ),
        latency_ms=None,
        throughput_ips=None,
        samples_ns=[],
        n_samples=0,
        stages=None,
    )


def record_from_native(run_id: str, cell: Cell, result: ToolResult) -> Record:
    """Only what the tool printed: no percentile is computed from min/max/avg. A tool that
    gives every inference's time (trtexec's --exportTimes) gets the statistics of a Python
    runner's record from those raw samples, and its stage split beside them."""
    latency = {
        "min": result.min_ms,
        "p50": result.median_ms,
        "mean": result.avg_ms,
        "std": result.std_ms,
    }
    measured: dict[str, Any] = dict(
        latency_ms={k: v for k, v in latency.items() if v is not None} or None,
        n_samples=result.count or 0,
        throughput_ips=result.throughput_ips or (1000.0 / result.avg_ms if result.avg_ms else None),
        first_inference_ms=result.first_ms,
        load_ms=result.init_ms,
        peak_rss_mb=result.memory_mb,
        native=ToolReport(
            tool=result.tool,
            tool_version=result.tool_version,
            stats_available=list(result.stats_available),
            max_ms=result.max_ms,
            raw_lines=result.raw_lines[-20:],
        ),
        framework_version=result.tool_version,
    )
    samples = [round(ms * 1e6) for ms in result.samples_ms or []]
    stats = latency_stats(samples) if samples else None
    if stats is not None:
        measured.update(samples_ns=samples, n_samples=len(samples), latency_ms=stats.as_record())
    if result.stage_samples_ms:
        measured["stages"] = Stages.from_samples(
            {k: [round(ms * 1e6) for ms in v] for k, v in result.stage_samples_ms.items()},
            result.stage_boundaries or {},
        )
    warnings = []
    if result.median_ms is None and stats is None:
        warnings.append(NO_PERCENTILES.make(tool=result.tool, printed=list(result.stats_available)))
    warnings.append(NO_OUTPUT_CHECK.make(reason="native tools do not return outputs here"))
    return new_record(run_id, cell, Status.OK, warnings=warnings, **measured)


def with_energy(
    record: Record, cell: Cell, trace: dict[str, Any], tool_avg_ms: float | None = None
) -> Record:
    """``record`` with the energy, power, temperature and clock state of a telemetry trace.

    ``tool_avg_ms``: the trace spans a native tool's whole run (load and warm-up too), so energy
    per inference is (mean power - idle) x the tool's average latency instead of the timed
    window's energy divided by its iterations.
    """
    settings = cell.telemetry
    profile = cell.device.profile
    limit = settings.temp_limit_c if settings and settings.temp_limit_c else None
    if limit is None and profile is not None:
        limit = profile.max_temp_c
    analysis = analyze(
        trace,
        record.n_samples,
        max_freq_khz=cell.device.facts.max_freq_khz if cell.device.facts else {},
        pinned_cpus=cell.cores,
        temp_limit_c=limit,
    )
    energy = replace(analysis, flags=list(analysis.flags))
    flags = list(analysis.flags)
    per_inference = analysis.energy_mj_per_inf
    if tool_avg_ms is not None:
        per_inference = None
        if not analysis.unavailable and analysis.active_power_w is not None and tool_avg_ms:
            per_inference = analysis.active_power_w * tool_avg_ms
            energy = replace(energy, energy_mj_per_inf=per_inference)
            flags.append(
                "native tool: energy/inference = (mean power - idle) x the tool's average latency"
            )
    if analysis.unavailable:
        flags.append(unavailable_flag(analysis.unavailable))
    cooldown = trace.get("cooldown") or {}
    if cooldown and not cooldown.get("reached"):
        flags.append(
            f"cool-down: hottest zone still {cooldown.get('end_c')} C after "
            f"{cooldown.get('waited_s')} s (limit {cooldown.get('limit_c')} C)"
        )
    governor = trace.get("governor") or {}
    warnings = [
        *record.warnings,
        *(GOVERNOR_NOT_SET.make(error=e) for e in governor.get("errors", [])),
    ]
    cpus = ((trace.get("state_before") or {}).get("cpus")) or {}
    slow = sorted({i["governor"] for i in cpus.values() if i.get("governor")} - {"performance"})
    if slow:
        warnings.append(GOVERNOR_NOT_PERFORMANCE.make(governors=slow))
    moved = limits_moved(trace.get("state_before"), trace.get("state_after"))
    if moved:
        warnings.append(CLOCK_LIMITS_MOVED.make(changes=moved))
    return replace(
        record.with_part("telemetry", trace),
        energy=energy,
        avg_power_w=analysis.avg_power_w,
        energy_flags=flags,
        energy_mj_per_inf=per_inference,
        warnings=warnings,
    )
