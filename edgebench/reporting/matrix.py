"""Device x framework tables from records: what `run` and `show` print.

Also how records are laid out in such tables (groups, framework order, status words, the
marks of the leading cells, warnings grouped by kind), which the HTML and Markdown reports
share. The figures shown are the stored ones (``Metric.stored``); which cells lead a row is
decided by analysis.ranking. A cell measured on an emulated CPU shows its figure marked
``(emulated)`` and never a best or tied mark; a note under the tables says which devices are
emulated and how that was known.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from edgebench.analysis.metrics import (
    GENERATIVE_DEFAULT_METRIC,
    Metric,
    energy_metric,
    get_metric,
    judged_metric,
)
from edgebench.analysis.ranking import (
    EMULATED_CPU,
    EMULATED_RULE,
    SOFTWARE_DEVICE,
    Ranking,
    correctness_only,
    emulated_devices,
    emulation_note,
    rank,
    software_devices,
    software_note,
    tie_rule,
)
from edgebench.analysis.statistics import HIGH_CV
from edgebench.compute_backends import engine_label, engine_order
from edgebench.frameworks import display_order, workload_of
from edgebench.reporting.tables import fmt_number, format_table, shorten
from edgebench.results.energy_part import unavailable_flag
from edgebench.results.quant_parts import Accuracy
from edgebench.results.record_warnings import (
    HIGH_VARIANCE,
    Merge,
    RecordWarning,
    WarningKind,
    by_kind,
    how_merged,
    kind_of,
    worst_of,
)
from edgebench.results.records import Record
from edgebench.statuses import MEASURED, ErrorKind, Status
from edgebench.terminal import printable_lines

GroupKey = tuple[str, str, int, str, int, str]

# Skipped cells say why in one or two words; other statuses speak for themselves.
SKIP_LABELS = {
    "not_installed": "not installed",
    "toolchain_missing": "no toolchain",
    "other_format": "-",
}
#: What an accelerator cell that ran on the CPU shows: never a figure.
FALLBACK_LABEL = "CPU fallback"
STATUS_LABELS: dict[str, str] = {
    Status.SKIPPED: "skipped",
    Status.FAILED: "FAILED",
    Status.UNSUPPORTED: "unsupported",
    Status.MISMATCH: "MISMATCH",
}


#: How a row's leading cells are marked: one clear best, or a leading group that is tied.
TEXT_MARKS = {"best": "*", "tied": "≈"}
REPORT_MARKS = {"best": " ★", "tied": " ≈"}
#: What an emulated cell shows after its figure instead of a mark (MeasurementKind.mark), and
#: what the legend says of it: it ranks nothing.
EMULATED_LEGEND = f"(emulated) = on an emulated CPU, {EMULATED_RULE}"
SOFTWARE_LEGEND = f"(software) = on a software GPU (lavapipe, pocl), {EMULATED_RULE}"
#: The longest "energy:" note per device; longer ones end with "…" after a whole word.
ENERGY_NOTE_WIDTH = 240
#: The metric a run shows when it asks for none.
DEFAULT_METRIC = "p50"


def _fmt(value: float | None) -> str:
    return fmt_number(value, tiny=".2f")


def framework_order(records: Sequence[Record]) -> list[str]:
    """The matrix columns (``Record.engine``): known frameworks in their registry order, then
    any others as they first appear; each framework's CPU column, then its accelerators."""
    frameworks = display_order(r.framework for r in records)
    engines = engine_order((r.framework, r.backend, r.cuda_graph) for r in records)
    return [
        engine_label(fw, backend, graph)
        for fw in frameworks
        for f, backend, graph in engines
        if f == fw
    ]


def legend_for(group: Sequence[Record]) -> str:
    """The legend of the marks a table's emulated and software cells carry."""
    legends = []
    if any(correctness_only(r) == EMULATED_CPU for r in group):
        legends.append(EMULATED_LEGEND)
    if any(correctness_only(r) == SOFTWARE_DEVICE for r in group):
        legends.append(SOFTWARE_LEGEND)
    return "".join(f"; {legend}" for legend in legends)


def group_records(records: Sequence[Record]) -> dict[GroupKey, list[Record]]:
    """One table per model, precision, threads, cores and streams, in order of appearance."""
    groups: dict[GroupKey, list[Record]] = {}
    for r in records:
        key = (r.model, r.precision, r.threads, r.cores, r.concurrency, variant_label(r))
        groups.setdefault(key, []).append(r)
    return groups


def variant_label(r: Record) -> str:
    """What sets a breakdown cell apart from the plain one: ``4 instances, shared`` or
    ``1x3x160x160, dynamic``; empty for a plain cell."""
    if r.instances is not None and r.instances.count is not None and r.instances.count > 1:
        return f"{r.instances.count} instances, {r.instances.mode}"
    if r.shape is not None and r.shape.mode:
        dims = "+".join(
            "x".join(str(d) for d in i.get("shape") or [])
            for i in r.inputs or []
            if isinstance(i, dict)
        )
        return f"{dims}, {r.shape.mode}"
    return ""


def group_title(key: GroupKey) -> str:
    model, precision, threads, cores, concurrency, variant = key
    parts = [model, precision, f"{threads} thread{'s' if threads != 1 else ''}", f"cores {cores}"]
    if variant:
        parts.append(variant)
    elif concurrency != 1:
        parts.append(f"{concurrency} streams")
    return " · ".join(parts)


def status_word(r: Record) -> str:
    """What a report cell says for a record: its status, for a skip the short reason, and
    ``CPU fallback`` for an accelerator cell that ran on the CPU."""
    if r.status == Status.SKIPPED:
        return SKIP_LABELS.get(r.error_kind or "", "skipped")
    if r.error_kind == ErrorKind.FALLBACK:
        return FALLBACK_LABEL
    return r.status


def emulation_notes(records: Sequence[Record]) -> list[str]:
    """``emulated: pi runs on an emulated CPU (...): latencies are ...``, once per device, and
    ``software: local · vulkan ran on a software device (...)``, once per device and backend."""
    return [
        *(f"emulated: {emulation_note(d, how)}" for d, how in emulated_devices(records).items()),
        *(f"software: {software_note(d, how)}" for d, how in software_devices(records).items()),
    ]


def emulated_mark(r: Record) -> str:
    """What an emulated cell shows after its figure: `` (software)`` on a software
    accelerator, `` (emulated)`` on an emulated CPU."""
    return r.measurement_kind.mark


def is_generative(group: Sequence[Record]) -> bool:
    """Whether a table's records are generative cells (their frameworks' workload)."""
    return any(workload_of(r.framework) == "generative" for r in group)


def rate_unit(record: Record) -> str:
    """What a record's throughput counts per second: a generative cell's is generated tokens."""
    return "tok/s" if is_generative([record]) else "inf/s"


def energy_unit(record: Record) -> str:
    """What a record's energy is per: ``mJ/tok`` (decoded token) for a generative cell."""
    return energy_metric(record.framework).bare_unit


def group_metric(group: Sequence[Record], metric_name: str) -> Metric:
    """The metric a table shows: the one asked for, as its frameworks mean it
    (``judged_metric``: a generative cell's throughput is its decode speed; its energy is per
    decoded token), but a generative model's table shows decode speed where the run asked for
    the default p50 (its p50 is per generated token)."""
    if is_generative(group) and metric_name == DEFAULT_METRIC:
        return get_metric(GENERATIVE_DEFAULT_METRIC)
    if metric_name == "energy" and group:
        return energy_metric(group[0].framework)
    return judged_metric(metric_name, {r.framework for r in group})


def format_matrix(records: Sequence[Record], metric_name: str = DEFAULT_METRIC) -> str:
    # Tensor and generative tables each have the columns of their own frameworks.
    columns = {
        kind: framework_order([r for r in records if is_generative([r]) == kind])
        for kind in (False, True)
    }
    out: list[str] = []
    for key, group in group_records(records).items():
        metric = group_metric(group, metric_name)
        frameworks = columns[is_generative(group)]
        devices = list(dict.fromkeys(r.device for r in group))
        rows = []
        rankings: list[Ranking[str]] = []
        for device in devices:
            cells = {r.engine: r for r in group if r.device == device}
            ranking = rank(cells, metric)
            rankings.append(ranking)
            row = [device]
            for framework in frameworks:
                record = cells.get(framework)
                if record is None:
                    row.append("")
                elif record.status == Status.SKIPPED:
                    row.append(status_word(record))
                elif record.error_kind == ErrorKind.FALLBACK:
                    row.append(FALLBACK_LABEL)
                elif record.status != Status.OK:
                    row.append(STATUS_LABELS.get(record.status, record.status))
                else:
                    value = metric.stored(record)
                    mark = TEXT_MARKS.get(ranking.standing(framework), "")
                    if correctness_only(record):
                        mark = emulated_mark(record)
                    average = (record.latency_ms or {}).get("mean")
                    if value is None and record.native and average:
                        # A native tool that printed no percentiles: show its average, labelled.
                        row.append(_fmt(average) + " avg" + mark)
                    else:
                        row.append(_fmt(value) + mark)
            rows.append(row)
        legend = legend_for(group)
        out.append(
            f"{group_title(key)} — {metric.label} ({metric.unit}), * = best on the device, "
            f"≈ = tied for best ({tie_rule(metric, rankings)}){legend}"
        )
        out.extend(format_table(["device", *frameworks], rows))
        out.append("")
    out.extend(emulation_notes(records))
    return printable_lines(out).rstrip() + "\n"


def group_warnings(
    warnings: Sequence[RecordWarning], without_advice: Sequence[WarningKind] = ()
) -> list[str]:
    """The lines that show a cell's warnings, kinds in order of first appearance, merged as
    each kind says (``Merge``): one line for the worst ("high variance (CV 18%) (worst of 3)",
    the highest CV, the fewest samples), one for the first of similar ones ("(+1 similar)"),
    or one per distinct warning. ``without_advice``: kinds shown by their headline only."""
    out = []
    for group in by_kind(warnings):
        advice = kind_of(group[0]) not in without_advice
        merge = how_merged(group)
        if merge == Merge.WORST:
            out.append(worst_of(group).shown(f" (worst of {len(group)})", advice))
        elif merge == Merge.SIMILAR:
            out.append(group[0].shown(f" (+{len(group) - 1} similar)", advice))
        else:
            out.extend(w.shown(advice=advice) for w in group)
    return out


def noisy_cells(records: Sequence[Record]) -> tuple[int, int]:
    """(cells whose pooled CV is above ``HIGH_CV``, ok cells with a CV)."""
    cvs = [
        cv
        for r in records
        if r.status == Status.OK and (cv := (r.latency_ms or {}).get("cv")) is not None
    ]
    return sum(1 for cv in cvs if cv > HIGH_CV), len(cvs)


def quiet_machine_advice(records: Sequence[Record]) -> list[str]:
    """Said once when most cells are noisy: how to quiet the machine. Empty otherwise."""
    noisy, measured = noisy_cells(records)
    if not measured or noisy * 2 <= measured:
        return []
    return [
        f"{noisy} of {measured} cells vary by more than {HIGH_CV:.0%} (CV): their numbers and "
        "ranking are blurred, and close cells show as tied.",
        "To quiet the machine: pin cores with --cores, close other load, set the governor to "
        "performance (--set-governor performance), raise --min-time, or sample until "
        "--target-ci is met.",
    ]


def _streams(r: Record) -> str | None:
    """A plain cell's streams (an instance cell's are its instances, in its variant label)."""
    count = r.instances.count if r.instances is not None else None
    return None if count is not None and count > 1 else f"{r.concurrency} streams"


#: The swept settings a cell's label names when the records differ in them.
_SWEPT: tuple[Callable[[Record], str | None], ...] = (
    lambda r: r.precision,
    lambda r: f"{r.threads}t",
    lambda r: f"cores {r.cores}",
    _streams,
)


def cell_labels(records: Sequence[Record]) -> list[str]:
    """``device/model/framework``, then each swept setting whose value differs between the
    records (precision, threads, cores, streams): ``--threads 1,2`` gives ``.../1t`` and
    ``.../2t``, never two rows that read alike."""
    parts = [f for f in _SWEPT if len({f(r) for r in records} - {None}) > 1]
    labels = []
    for r in records:
        named = [value for f in parts if (value := f(r)) is not None]
        labels.append("/".join([r.device, r.model, r.engine, *named]))
    return labels


def format_details(records: Sequence[Record]) -> str:
    """Every cell with its full statistics, then the reasons for cells that did not run, the
    notes (warnings grouped per cell and kind) and, for a mostly noisy run, one word on noise."""
    # Throughput per second of inferences, or of tokens for generative cells: named once in
    # the header when every row counts the same, else beside each figure.
    units = {rate_unit(r) for r in records if r.status != Status.SKIPPED}
    rate_head = next(iter(units)) if len(units) == 1 else "rate/s"
    # Energy per inference, or per decoded token for generative cells: likewise.
    energy_units = {energy_unit(r) for r in records if r.status != Status.SKIPPED}
    energy_head = next(iter(energy_units)) if len(energy_units) == 1 else "mJ"
    header = [
        *("cell", "status", "p50", "p90", "p99", "cv", rate_head, "cpu ms"),
        *("peak MB", energy_head, "n"),
    ]
    rows = []
    notes = []
    skipped: dict[str, str] = {}
    energy_gaps: dict[str, str] = {}
    advice = quiet_machine_advice(records)
    for r, cell in zip(records, cell_labels(records), strict=True):
        if variant_label(r):
            cell += f" ({variant_label(r)})"
        if r.status == Status.SKIPPED:
            skipped.setdefault(f"{r.engine} on {r.device}", r.error or "skipped")
            continue
        lat = r.latency_ms or {}
        cv = lat.get("cv")
        rows.append(
            [
                cell,
                r.status + emulated_mark(r) if correctness_only(r) else r.status,
                _fmt(lat.get("p50")),
                _fmt(lat.get("p90")),
                _fmt(lat.get("p99")),
                "-" if cv is None else f"{cv:.1%}",
                _fmt(r.throughput_ips)
                + ("" if len(units) == 1 else " " + rate_unit(r).removesuffix("/s")),
                _fmt(r.cpu_ms_per_inf),
                _fmt(r.peak_rss_mb if r.status in MEASURED else None),
                _fmt(r.energy_mj_per_inf)
                + ("!" if r.energy_flags and r.energy_mj_per_inf else "")
                + ("" if len(energy_units) == 1 else energy_unit(r).removeprefix("mJ")),
                str(r.n_samples or "-"),
            ]
        )
        if r.error and r.status != Status.SKIPPED:
            notes.append(f"  {cell}: {r.error}")
        # With the quiet-machine advice (said once, below), high variance needs no advice.
        plain = [HIGH_VARIANCE] if advice else []
        notes.extend(f"  {cell}: warning: {w}" for w in group_warnings(r.warnings, plain))
        if r.accuracy:
            notes.append(f"  {cell}: {describe_accuracy(r)}")
        if r.sustained:
            notes.append(f"  {cell}: {r.sustained.describe()}")
        if r.generation is not None and r.status in MEASURED:
            notes.append(f"  {cell}: {r.generation.describe()} (p50/p90/p99: per token)")
        if r.accelerator is not None and r.status in MEASURED:
            notes.append(f"  {cell}: {describe_accelerator_run(r)}")
        if r.nvidia is not None and r.status in MEASURED:
            notes.append(f"  {cell}: {r.nvidia.describe()}")
        why = r.energy.unavailable if r.energy else None
        gap = unavailable_flag(why) if why else None
        if gap:
            energy_gaps.setdefault(r.device, shorten(gap, ENERGY_NOTE_WIDTH))
        notes.extend(f"  {cell}: energy: {f}" for f in r.energy_flags if f != gap)
    lines = format_table(header, rows) if rows else []
    if skipped:
        lines += ["", "skipped:", *(f"  {reason}" for reason in skipped.values())]
    if energy_gaps:
        lines += ["", "energy:", *(f"  {d}: {why}" for d, why in energy_gaps.items())]
    if notes:
        lines += ["", "notes:", *notes]
    if advice:
        lines += ["", "noise:", *(f"  {line}" for line in advice)]
    return printable_lines(lines) + "\n"


def describe_accelerator_run(r: Record) -> str:
    """One line on an accelerator cell: what ran it, the first inference (shader and pipeline
    compilation) apart from the steady state, and the CPU time each inference still took."""
    run = r.accelerator
    assert run is not None
    parts = [f"on {run.describe()}"]
    if r.first_inference_ms is not None:
        parts.append(f"first inference {_fmt(r.first_inference_ms)} ms")
    if r.cpu_ms_per_inf is not None:
        parts.append(f"CPU {_fmt(r.cpu_ms_per_inf)} ms per inference")
    if run.device_memory_mb is not None:
        parts.append(f"device memory {_fmt(run.device_memory_mb)} MB")
    elif run.device_memory_unavailable:
        parts.append(f"device memory unavailable ({run.device_memory_unavailable})")
    if run.stages_note:
        parts.append(run.stages_note)
    return "; ".join(parts)


def describe_accuracy(r: Record) -> str:
    """One line on a quantized cell: its accuracy against fp32 and the sets it was judged on."""
    acc = r.accuracy or Accuracy(n=None)
    parts = [f"accuracy vs fp32 ONNX Runtime on {acc.n} evaluation samples:"]
    if acc.top1_agreement is not None:
        parts.append(f"top-1 agreement {acc.top1_agreement:.0%},")
    parts.append(f"SQNR {acc.sqnr_db or 0.0:.1f} dB,")
    parts.append(f"min cosine {acc.cosine_min or 0.0:.4f}")
    calibration = r.quant.calibration if r.quant is not None else None
    if calibration:
        synthetic = " synthetic" if calibration.synthetic else ""
        parts.append(f"(calibrated on {calibration.n}{synthetic} samples)")
    fallback = r.quant.fp32_fallback_ops if r.quant is not None else []
    if fallback:
        parts.append(f"fp32 fallback: {', '.join(fallback)}")
    return " ".join(parts)
