"""The warnings registry: every kind of warning a record can carry, declared once.

A warning is a kind, its figures and the message worded from them (``RecordWarning``). Each
kind says what its figures are, how it is worded (a headline, then the advice after ": "), how
several of one cell's merge (pooled rounds, a matrix cell) and whether it survives pooling a
cell's rounds. Producers make warnings through their kind (``HIGH_VARIANCE.make(cv=0.12)``);
readers go by kind and figures, never by the message.

Records store the messages under ``warnings``, as earlier versions did, and each one's kind and
figures under ``warning_details``. A record written before that holds only messages: each reads
as the ``unclassified`` kind, without figures, and is shown as it is (``unclassified``, the one
place a warning's text is taken as it comes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

#: How a kind is worded from its figures: a ``str.format`` template, or a function for wording
#: that a template cannot say (a list joined, a phrase chosen by a figure).
Wording = str | Callable[[Mapping[str, Any]], str]


class Merge(StrEnum):
    """How several warnings of one kind on one cell become what is kept and shown."""

    #: Every distinct warning is kept and shown.
    EACH = "each"
    #: Every distinct one is kept; the first is shown for all ("(+2 similar)").
    SIMILAR = "similar"
    #: Only the worst by the kind's ``worst`` figure is kept and shown ("(worst of 3)").
    WORST = "worst"


@dataclass(frozen=True)
class RecordWarning:
    """One warning on a record: its kind's name, its figures, and the message worded from them."""

    kind: str
    figures: Mapping[str, Any] = field(default_factory=dict)
    message: str = ""

    def __hash__(self) -> int:  # figures is a dict; equal warnings have equal messages
        return hash((self.kind, self.message))

    def is_a(self, kind: WarningKind) -> bool:
        return self.kind == kind.name

    def shown(self, note: str = "", advice: bool = True) -> str:
        """The message with ``note`` after its headline, and without its advice if asked; an
        unclassified warning (or one a newer version wrote) as it is, the note at the end."""
        kind = kind_of(self)
        if kind is not UNCLASSIFIED and set(self.figures) == set(kind.figures):
            try:
                return kind.word(self.figures, note, advice)
            except (TypeError, ValueError, ArithmeticError):
                pass  # figures of the wrong type, from a damaged or hand-edited record
        return self.message + note


@dataclass(frozen=True)
class WarningKind:
    """One kind of record warning, as the registry declares it."""

    name: str
    #: Each figure's name and what it is.
    figures: Mapping[str, str]
    #: What happened, from the figures.
    headline: Wording
    #: What it means or what to do, shown after ": " (empty: nothing to add).
    advice: Wording = ""
    merge: Merge = Merge.EACH
    #: ``Merge.WORST``: the figure that says how bad it is, and whether more is worse.
    worst: str | None = None
    highest_is_worst: bool = True
    #: Kept when a cell's rounds are pooled into one record. False for warnings about the
    #: samples, which the pooled samples' own statistics replace.
    pooled: bool = True

    def make(self, **figures: Any) -> RecordWarning:
        if set(figures) != set(self.figures):
            raise TypeError(
                f"warning {self.name} takes {sorted(self.figures)}, not {sorted(figures)}"
            )
        return RecordWarning(self.name, figures, self.word(figures))

    def word(self, figures: Mapping[str, Any], note: str = "", advice: bool = True) -> str:
        text = _fill(self.headline, figures) + note
        if advice and self.advice:
            text += ": " + _fill(self.advice, figures)
        return text


def _fill(wording: Wording, figures: Mapping[str, Any]) -> str:
    return wording.format(**figures) if isinstance(wording, str) else wording(figures)


def _ended(figures: Mapping[str, Any]) -> str:
    stop = figures["stop_reason"]
    return "at --max-time" if stop == "max_time" else f"({stop})"


def _ops_outweigh(figures: Mapping[str, Any]) -> str:
    total, inference = figures["total_ms"], figures["inference_ms"]
    if str(figures["source"] or "").startswith("benchmark_app"):
        why = "benchmark_app's counters include its untimed first inference: "
        why += "raise --profile-iterations"
    else:
        why = "read the ops' shares, not their times"
    return (
        f"the ops add up to {total:.4g} ms, {total / inference:.1f}x the {inference:.4g} ms "
        f"inference they were timed in, so their times are not per inference ({why})"
    )


_REASON = {"reason": "why not, in words"}

# Statistics of the timed samples (analysis/statistics.py).
FEW_SAMPLES = WarningKind(
    "few_samples",
    {"samples": "how many timed samples the statistics came from"},
    "only {samples} samples",
    "p99 is not a real tail (raise --iterations or --min-time)",
    Merge.WORST,
    worst="samples",
    highest_is_worst=False,
    pooled=False,
)
#: FEW_SAMPLES of a generative cell, whose samples are per generated token and whose count
#: --gen-tokens and --rounds set (--iterations and --min-time do not apply to it).
FEW_TOKEN_SAMPLES = WarningKind(
    "few_token_samples",
    {"samples": "how many per-token decode samples the statistics came from"},
    "only {samples} per-token samples",
    "p99 is not a real tail (raise --gen-tokens or --rounds)",
    Merge.WORST,
    worst="samples",
    highest_is_worst=False,
    pooled=False,
)
HIGH_VARIANCE = WarningKind(
    "high_variance",
    {"cv": "coefficient of variation of the timed samples (std / mean, a ratio)"},
    "high variance (CV {cv:.0%})",
    "pin cores, close other load, or raise --min-time",
    Merge.WORST,
    worst="cv",
)
# How the cell ran (measure/records.py, measure/methods/).
CORES_NOT_APPLIED = WarningKind(
    "cores_not_applied",
    {"asked": "the cpu ids the cell asked for", "effective": "the cpu ids the runner ran on"},
    "asked for cores {asked} but the runner ran on {effective}",
    merge=Merge.SIMILAR,
)
NO_PERCENTILES = WarningKind(
    "no_percentiles",
    {"tool": "the native benchmark tool", "printed": "the statistics it prints"},
    lambda f: f"{f['tool']} prints only {', '.join(f['printed'])}",
    "no percentiles (the Python runner records per-iteration samples)",
)
INPUT_NOT_USED = WarningKind(
    "input_not_used",
    {"runner": "what measured the cell"},
    "--input is not used here",
    "{runner} times its own inputs",
)
GOVERNOR_NOT_SET = WarningKind(
    "governor_not_set",
    {"error": "what the device said when the governor was set"},
    "governor",
    "{error}",
)
GOVERNOR_NOT_PERFORMANCE = WarningKind(
    "governor_not_performance",
    {"governors": "the pinned cores' governors other than performance"},
    lambda f: f"governor {', '.join(f['governors'])} on the pinned cores",
    "clocks may move during the cell (--set-governor performance where the device allows it)",
)
NO_TELEMETRY = WarningKind("no_telemetry", _REASON, "no telemetry", "{reason}")
# The clock regime (measure/fixed_performance.py, measure/records.py).
FIXED_PERFORMANCE_NOT_SET = WarningKind(
    "fixed_performance_not_set", _REASON, "--fixed-performance not applied", "{reason}"
)
CLOCK_LIMITS_MOVED = WarningKind(
    "clock_limits_moved",
    {"changes": "what changed in the pinned cores' governors and limits over the window"},
    lambda f: f"clocks moved during the window: {'; '.join(f['changes'])}",
    "the cell did not run in one clock regime (a thermal cap or a daemon moved the limits)",
)
ROUNDS_CUT_SHORT = WarningKind(
    "rounds_cut_short",
    {"done": "rounds that finished", "rounds": "rounds the cell was to run"},
    "stopped after {done} of {rounds} rounds (Ctrl-C)",
    "the samples are pooled from the rounds that finished",
)
# The outputs (measure/output_check.py, measure/quantized_check.py).
NO_OUTPUT_CHECK = WarningKind("no_output_check", _REASON, "no output check", "{reason}")
BLANK_REFERENCE = WarningKind(
    "blank_reference",
    {
        "output": "the reference output's name",
        "problem": "what is wrong with it (close to zero everywhere, constant, NaN)",
        "input": "the input it was computed for",
    },
    "the reference output {output} {problem} for {input}",
    "a check on a blank output proves little; give a real input with --input",
)
NO_ACCURACY = WarningKind("no_accuracy", _REASON, "no accuracy", "{reason}")
ACCURACY_FROM_ONE_INPUT = WarningKind(
    "accuracy_from_one_input",
    {},
    "accuracy from 1 input only",
    "this measurement method does not run the evaluation set",
)
# Breakdowns (measure/breakdowns.py, analysis/breakdowns.py, measure/methods/framework_tools.py).
OP_PROFILE_FAILED = WarningKind(
    "op_profile_failed",
    {"problem": "why the profiling run gave no profile"},
    "--profile ops",
    "the profiling run failed: {problem}",
)
OPS_OUTWEIGH_INFERENCE = WarningKind(
    "ops_outweigh_inference",
    {
        "total_ms": "the ops' times added up (ms)",
        "inference_ms": "the inference they were timed in (ms)",
        "source": "the profiler that timed them",
    },
    "--profile ops",
    _ops_outweigh,
)
INSTANCES_CUT_SHORT = WarningKind(
    "instances_cut_short",
    {
        "ran": "instances that finished an inference in the timed window",
        "count": "instances the cell loaded",
        "stop_reason": "why the timed window ended",
    },
    lambda f: (
        f"only {f['ran']} of the {f['count']} instances finished an inference before "
        f"the timed window ended {_ended(f)}"
    ),
    "latency, throughput and memory are not with all of them running; raise --max-time",
    Merge.WORST,
    worst="ran",
    highest_is_worst=False,
)
INSTANCES_APART = WarningKind(
    "instances_apart",
    {
        "at_once": "the most instances inferring at the same moment",
        "count": "instances the cell loaded",
    },
    "at most {at_once} of the {count} instances were inferring at the same moment (one "
    "inference is shorter than starting them all)",
    "throughput and memory are with up to {at_once} running, not {count}",
    Merge.WORST,
    worst="at_once",
    highest_is_worst=False,
)
#: A message from a record written before warnings had kinds.
UNCLASSIFIED = WarningKind("unclassified", {}, "")

WARNING_KINDS: dict[str, WarningKind] = {
    kind.name: kind
    for kind in (
        FEW_SAMPLES,
        FEW_TOKEN_SAMPLES,
        HIGH_VARIANCE,
        CORES_NOT_APPLIED,
        NO_PERCENTILES,
        INPUT_NOT_USED,
        GOVERNOR_NOT_SET,
        GOVERNOR_NOT_PERFORMANCE,
        NO_TELEMETRY,
        FIXED_PERFORMANCE_NOT_SET,
        CLOCK_LIMITS_MOVED,
        ROUNDS_CUT_SHORT,
        NO_OUTPUT_CHECK,
        BLANK_REFERENCE,
        NO_ACCURACY,
        ACCURACY_FROM_ONE_INPUT,
        OP_PROFILE_FAILED,
        OPS_OUTWEIGH_INFERENCE,
        INSTANCES_CUT_SHORT,
        INSTANCES_APART,
        UNCLASSIFIED,
    )
}


def kind_of(warning: RecordWarning) -> WarningKind:
    """The warning's kind; one this version does not know (a newer writer's) merges and shows
    like an unclassified one."""
    return WARNING_KINDS.get(warning.kind, UNCLASSIFIED)


def unclassified(message: str) -> RecordWarning:
    return RecordWarning(UNCLASSIFIED.name, {}, message)


def distinct(warnings: Iterable[RecordWarning]) -> list[RecordWarning]:
    """The warnings without repeats, in order of first appearance."""
    return list(dict.fromkeys(warnings))


def worst_of(warnings: Sequence[RecordWarning]) -> RecordWarning:
    """Of warnings of one ``Merge.WORST`` kind, the one whose ``worst`` figure is worst (the
    first of equals)."""
    kind = kind_of(warnings[0])
    sign = 1 if kind.highest_is_worst else -1
    return max(warnings, key=lambda w: sign * float(w.figures[kind.worst]))  # type: ignore[index]  # kinds with a worst figure only


def by_kind(warnings: Iterable[RecordWarning]) -> list[list[RecordWarning]]:
    """The distinct warnings grouped by kind, kinds in order of first appearance."""
    groups: dict[str, list[RecordWarning]] = {}
    for warning in distinct(warnings):
        groups.setdefault(kind_of(warning).name, []).append(warning)
    return list(groups.values())


def how_merged(group: Sequence[RecordWarning]) -> Merge:
    """How a group of one kind's warnings (``by_kind``) merges: as its kind says, or each on
    its own when there is one, or when their worst figures cannot be compared (a stored
    record's figure of the wrong type)."""
    merge = kind_of(group[0]).merge
    if len(group) == 1 or (merge == Merge.WORST and not _comparable(group)):
        return Merge.EACH
    return merge


def merge_warnings(warnings: Iterable[RecordWarning]) -> list[RecordWarning]:
    """One cell's warnings merged as their kinds say: the worst one for ``Merge.WORST`` kinds,
    each distinct one otherwise, in order of first appearance."""
    out = []
    for group in by_kind(warnings):
        out.extend([worst_of(group)] if how_merged(group) == Merge.WORST else group)
    return out


def pool_warnings(
    rounds: Sequence[Sequence[RecordWarning]], recomputed: Sequence[RecordWarning]
) -> list[RecordWarning]:
    """The warnings of a record pooled from a cell's rounds: each round's that survive pooling,
    then those ``recomputed`` from the pooled samples, merged per kind."""
    kept = [w for warnings in rounds for w in warnings if kind_of(w).pooled]
    return merge_warnings([*kept, *recomputed])


def _comparable(group: Sequence[RecordWarning]) -> bool:
    """Whether every warning of the group holds its kind's ``worst`` figure (a newer writer's
    kind, or a message without figures, does not)."""
    figure = kind_of(group[0]).worst
    return figure is not None and all(isinstance(w.figures.get(figure), int | float) for w in group)


def warnings_to_json(warnings: Sequence[RecordWarning]) -> dict[str, Any]:
    """The stored form: the messages under ``warnings`` (as earlier versions wrote them) and
    each one's kind and figures, in the same order, under ``warning_details``. Without a
    classified warning there are no details to add: the record is written as earlier
    versions wrote it."""
    stored: dict[str, Any] = {"warnings": [w.message for w in warnings]}
    if any(w.kind != UNCLASSIFIED.name for w in warnings):
        details = [{"kind": w.kind, "figures": dict(w.figures)} for w in warnings]
        stored["warning_details"] = details
    return stored


def warnings_from_json(messages: Any, details: Any) -> list[RecordWarning]:
    """The warnings of a stored record. Without ``warning_details`` (a record written before
    warnings had kinds) every message reads as ``unclassified``."""
    if messages is None:
        return []
    if not isinstance(messages, list) or not all(isinstance(m, str) for m in messages):
        raise ValueError("field warnings is not a list of messages")
    if details is None:
        return [unclassified(message) for message in messages]
    if not isinstance(details, list) or len(details) != len(messages):
        raise ValueError("field warning_details does not hold one entry per warning")
    out = []
    for message, detail in zip(messages, details, strict=True):
        if not (
            isinstance(detail, dict)
            and isinstance(detail.get("kind"), str)
            and isinstance(detail.get("figures"), dict)
        ):
            raise ValueError("field warning_details holds an entry without kind and figures")
        out.append(RecordWarning(detail["kind"], detail["figures"], message))
    return out
