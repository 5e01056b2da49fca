"""One run configuration, composed of parts, filled by the command line and by plan files.

Every setting of `edgebench run` is declared once here, as a dataclass field with its checker,
its help text and its place in a plan file. The command line options are generated from these
declarations (``edgebench.cli.run``) and a plan's tables are read through the same checkers
(``edgebench.planning.plan_file``), so a name, a default or a rule cannot differ between them.
The whole configuration is stored in ``run.json`` under ``"config"``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.analysis.metrics import METRICS
from edgebench.errors import UserError
from edgebench.planning import limits
from edgebench.planning.checks import (
    Check,
    calibration_source,
    choice,
    choices,
    flag,
    folder,
    fraction,
    input_file,
    number,
    one_of,
    optional,
    path,
    preprocessing,
    text,
    whole,
)
from edgebench.planning.session_settings import Session
from edgebench.planning.setting import setting
from edgebench.planning.sweep_settings import PRECISIONS, Sweep
from edgebench.planning.tolerances import DEFAULT_TOLERANCE, TOLERANCES, Tolerance
from edgebench.quantization.accuracy import AccuracyRule
from edgebench.runners.protocol.spec import RunSpec, TelemetrySpec
from edgebench.runners.protocol.telemetry import SOURCE_KINDS

__all__ = [
    "DEFAULT_TOLERANCE",
    "PRECISIONS",
    "TOLERANCES",
    "Session",
    "Sweep",
    "Tolerance",
    "setting",
]  # re-exported: the checks read them here

# --------------------------------------------------------------------------- declarations


ENERGY_SOURCES = SOURCE_KINDS  # the runner's vocabulary


@dataclass
class TimingConfig:
    """How long and how often each cell is timed. In a plan: ``[timing]``."""

    warmup: int = setting(RunSpec.warmup, whole(0, limits.MAX_WARMUP), "Untimed iterations first.")
    iterations: int = setting(
        RunSpec.iterations, whole(1, limits.MAX_ITERATIONS), "Minimum timed iterations."
    )
    min_time_s: float = setting(
        RunSpec.min_time_s,
        number(0, limit=limits.MAX_SECONDS),
        "Minimum timed seconds per cell.",
        named="min_time",
    )
    max_time_s: float = setting(
        RunSpec.max_time_s,
        number(0.01, limit=limits.MAX_SECONDS),
        "Stop timing a cell after this many seconds.",
        named="max_time",
    )
    timeout_s: float = setting(
        600.0,
        number(1, limit=limits.MAX_SECONDS),
        "Seconds before a cell is abandoned.",
        named="timeout",
    )
    rounds: int | None = setting(
        None,
        optional(whole(1, limits.MAX_ROUNDS)),
        "Visit each device's cells in N interleaved rounds (A B C A B C) and pool the samples "
        "[default: 3 when several frameworks share a device, else 1].",
    )
    target_ci_pct: float | None = setting(
        None,
        optional(number(0.01, 50)),
        "Keep sampling until the 95% CI of the median is within +-PCT % (capped by --max-time).",
        named="target_ci",
    )
    sustained_s: float | None = setting(
        None,
        optional(number(1, limit=limits.MAX_SECONDS)),
        "Run each cell continuously for this many seconds and compare its first and last 10%.",
        named="sustained",
    )


@dataclass
class BreakdownConfig:
    """Where the time goes inside a cell. In a plan: ``[breakdown]``."""

    profile: list[str] = setting(
        [],
        choices("ops"),
        "ops: per-operator times from a separate profiled pass after the timed window.",
        repeat=True,
    )
    profile_iterations: int = setting(
        10, whole(1, limits.MAX_PROFILE_ITERATIONS), "Inferences in the profiled pass."
    )
    no_stages: bool = setting(
        False, flag, "Time whole inferences only, not copy-in, compute and copy-out apart."
    )
    cuda_graphs: bool = setting(
        False,
        flag,
        "Add a CUDA Graphs variant of every CUDA cell (TensorRT, ONNX Runtime on cuda or "
        "tensorrt): the inference captured once and replayed.",
    )


@dataclass
class TelemetryConfig:
    """What is sampled on the device beside the timed loop. In a plan: ``[telemetry]``."""

    energy_source: str | None = setting(
        None,
        optional(choice(*ENERGY_SOURCES)),
        "Energy source on the devices [default: the device profile's, else auto].",
    )
    baseline_s: float = setting(
        1.0,
        number(0, limit=limits.MAX_SECONDS),
        "Idle power is measured this long before each cell.",
    )
    period_s: float = setting(
        TelemetrySpec.period_s,
        number(0.005, limit=limits.MAX_PERIOD_S),
        "Seconds between telemetry samples on the device.",
        option="--telemetry-period",
    )
    sync_marker: str | None = setting(
        None,
        optional(text),
        "Device file that exists while the timed window runs (for external power meters).",
    )
    cooldown_temp_c: float | None = setting(
        None,
        optional(number(limit=limits.MAX_TEMPERATURE_C)),
        "Before each cell, wait until the hottest thermal zone is below this, C.",
        named="cooldown_temp",
    )
    cooldown_max_wait_s: float = setting(
        120.0,
        number(0, limit=limits.MAX_SECONDS),
        "Longest cool-down wait per cell, s.",
        named="cooldown_max_wait",
    )
    set_governor: str | None = setting(
        None,
        optional(text),
        "cpufreq governor for the pinned cores during each cell (e.g. performance; needs root "
        "on the device), restored afterwards.",
    )
    fixed_performance: bool = setting(
        False,
        flag,
        "Android: turn on the fixed-performance mode (cmd power set-fixed-performance-mode-"
        "enabled, Android 11+) before a device's cells and off after them; a device that "
        "refuses it runs its cells anyway, each with a warning.",
    )
    temp_limit_c: float | None = setting(
        None,
        optional(number(limit=limits.MAX_TEMPERATURE_C)),
        "Flag cells hotter than this, C [default: the profile's max_temp_c].",
        named="temp_limit",
    )


@dataclass
class CheckConfig:
    """The inputs and the output check against ONNX Runtime. In a plan: ``[checks]``."""

    seed: int = setting(0, whole(0, limits.MAX_SEED), "Seed of the input tensors.")
    input: Path | None = setting(
        None,
        optional(input_file),
        "Feed this file to every framework, for the check and the timing, instead of seeded "
        "inputs: an image (Pillow), an .npy, or an .npz with one array per input name.",
    )
    preprocess: str | None = setting(
        None,
        optional(preprocessing),
        "How an --input or --calibration image becomes the tensor: key=value items separated "
        "by ';', from mean and std (per channel), layout (nchw, nhwc), size (HxW), scale and "
        "color (rgb, bgr) [default: pixels x 1/255, no mean or std, the model input's size and "
        "layout, rgb].",
    )
    reference: Path | None = setting(
        None, optional(path), "ONNX model that pre-converted artifacts are checked against."
    )
    tolerance: float = setting(
        DEFAULT_TOLERANCE["fp32"],
        number(0, limit=limits.MAX_TOLERANCE),
        "Output check of fp32 cells: the error each output element may have vs ONNX Runtime, "
        "as a fraction of the element's size plus the output's peak size (allclose rtol; "
        "atol = rtol x peak).",
    )
    tolerance_fp16: float = setting(
        DEFAULT_TOLERANCE["fp16"],
        number(0, limit=limits.MAX_TOLERANCE),
        "Like --tolerance, for fp16 cells.",
    )
    force_convert: bool = setting(
        False, flag, "Reconvert even when the cache has the artifact.", plan=None
    )
    tflite_converter: str = setting(
        "edgebench",
        choice("edgebench", "onnx2tf"),
        "ONNX -> TFLite converter: edgebench's own writer, or onnx2tf for comparison (needs "
        "`edgebench toolchains install tflite`).",
    )
    from_tflite: str = setting(
        "onnx",
        choice("onnx", "direct"),
        "A model given as a .tflite: every framework converts from its ONNX twin (onnx), or "
        "OpenVINO and MNN read the .tflite itself (direct; the others still use the twin).",
    )

    def tolerances(self) -> dict[str, float]:
        return {"fp32": self.tolerance, "fp16": self.tolerance_fp16}


@dataclass
class QuantizationConfig:
    """The calibration and evaluation sets of quantized cells, and the accuracy they must keep
    (docs/quantization.md). In a plan: ``[quantization]``."""

    calibration: Path | None = setting(
        None,
        optional(calibration_source),
        "int8 calibration set, the same for every framework: a folder of images, .npy or .npz "
        "files, or one .npz/.npy stacking samples on its first axis [default: a seeded "
        "synthetic set, recorded as synthetic].",
    )
    eval: Path | None = setting(
        None,
        optional(calibration_source),
        "Held-out evaluation set for the accuracy of quantized cells (same forms as "
        "--calibration) [default: the samples calibration did not use].",
    )
    calibration_samples: int = setting(
        32,
        whole(1, limits.MAX_SAMPLES),
        "At most this many samples calibrate (the synthetic set has this many).",
    )
    eval_samples: int = setting(
        8, whole(1, limits.MAX_SAMPLES), "At most this many samples evaluate accuracy."
    )
    int8_min_top1: float = setting(
        AccuracyRule.min_top1,
        number(0, 1),
        "Quantized cells: the least top-1 agreement with fp32 ONNX Runtime on the evaluation "
        "set (classifier outputs), else mismatch.",
    )
    int8_min_sqnr_db: float = setting(
        AccuracyRule.min_sqnr_db,
        number(limit=limits.MAX_SQNR_DB),
        "Quantized cells: the least SQNR (dB) of every output against fp32 ONNX Runtime on the "
        "evaluation set, else mismatch.",
        named="int8_min_sqnr",
    )

    def accuracy_rule(self) -> AccuracyRule:
        return AccuracyRule(min_top1=self.int8_min_top1, min_sqnr_db=self.int8_min_sqnr_db)


@dataclass
class OutputConfig:
    """Where results go and how they are printed. Command line only."""

    results_dir: Path | None = setting(
        None,
        optional(folder),
        "Where runs are stored [default: $EDGEBENCH_RESULTS or ~/.local/share/edgebench/runs].",
        plan=None,
    )
    format: str = setting(
        "table", choice("table", "jsonl"), "table, or jsonl (records on stdout).", plan=None
    )
    metric: str = setting("p50", one_of(METRICS, "metric"), "What the matrix shows.", plan=None)
    junit: Path | None = setting(
        None,
        optional(path),
        "With --plan: write the comparison with the baseline as JUnit XML.",
        plan=None,
    )


@dataclass
class Thresholds:
    """What counts as a regression against a plan's recent nights or its last good run (docs/
    nightly.md). In a plan: ``[thresholds]``;
    `edgebench compare` takes them as options (``--min-effect``, ``--alpha``, ``--metric``)."""

    min_effect: float = setting(
        0.05, fraction(low_open=False), "Smallest relative change that counts.", option=None
    )
    alpha: float = setting(
        0.01,
        fraction(low_open=True),
        "Significance level of the Mann-Whitney U test on the raw samples.",
        option=None,
    )
    metric: str = setting(
        "p50", one_of(METRICS, "metric"), "Metric the regression is judged on.", option=None
    )
    gate: str = setting(
        "history",
        choice("history", "last-run"),
        "history: each cell against its recent nights (a change point tonight, or a value "
        "outside their spread); last-run: against the last good run's samples only.",
        option=None,
    )
    history_nights: int = setting(
        30,
        whole(5, 1000),
        "How many recent good nights of the plan the history gate weighs tonight against.",
        option=None,
    )


#: Part name -> (class, the plan table that fills it; "" is the top level).
PARTS: dict[str, tuple[type, str | None]] = {
    "sweep": (Sweep, "sweep"),
    "timing": (TimingConfig, "timing"),
    "breakdown": (BreakdownConfig, "breakdown"),
    "telemetry": (TelemetryConfig, "telemetry"),
    "checks": (CheckConfig, "checks"),
    "quantization": (QuantizationConfig, "quantization"),
    "output": (OutputConfig, None),
    "thresholds": (Thresholds, "thresholds"),
    "session": (Session, None),
}
#: Sweep fields a plan gives at its top level rather than in [sweep].
TOP_LEVEL_SWEEP = ("devices", "models", "frameworks")


@dataclass
class RunConfig:
    """Everything `edgebench run` needs to know, in one value."""

    sweep: Sweep = field(default_factory=Sweep)
    timing: TimingConfig = field(default_factory=TimingConfig)
    breakdown: BreakdownConfig = field(default_factory=BreakdownConfig)
    telemetry: TelemetryConfig = field(default_factory=TelemetryConfig)
    checks: CheckConfig = field(default_factory=CheckConfig)
    quantization: QuantizationConfig = field(default_factory=QuantizationConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    thresholds: Thresholds = field(default_factory=Thresholds)
    session: Session = field(default_factory=Session)
    #: The plan's name, when a plan filled part of this configuration.
    plan_name: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, for run.json."""
        out: dict[str, Any] = {}
        for part in PARTS:
            values = dataclasses.asdict(getattr(self, part))
            out[part] = {k: str(v) if isinstance(v, Path) else v for k, v in values.items()}
        out["plan_name"] = self.plan_name
        return out


@dataclass(frozen=True)
class SettingSpec:
    """One declared setting, as the command line and the plan reader see it."""

    part: str
    name: str
    #: The name users type: the field's name without its unit where it carries one.
    typed: str
    check: Check
    help: str
    #: The command-line flag wherever the setting is an option (`run`'s, or another command's).
    flag: str
    #: ``flag`` when `run` has the option, else None.
    option: str | None
    plan_table: str | None
    plan_key: str | None
    repeat: bool
    default: Any
    show_default: bool

    @property
    def dest(self) -> str:
        """The click parameter name: unique across parts."""
        return f"{self.part}__{self.name}"


def settings() -> Iterator[SettingSpec]:
    for part, (cls, table) in PARTS.items():
        for f in dataclasses.fields(cls):
            meta = f.metadata
            typed = meta["named"] or f.name
            flag = meta["option"] or "--" + typed.replace("_", "-")
            key = meta["plan"]
            if key == "":
                key = typed
            plan_table = table
            if part == "sweep" and f.name in TOP_LEVEL_SWEEP:
                plan_table = ""
            default = (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            )
            yield SettingSpec(
                part=part,
                name=f.name,
                typed=typed,
                check=meta["check"],
                help=meta["help"],
                flag=flag,
                option=None if meta["option"] is None else flag,
                plan_table=plan_table if key is not None else None,
                plan_key=key,
                repeat=meta["repeat"],
                default=default,
                show_default=meta["show_default"],
            )


def find_setting(part: str, name: str) -> SettingSpec:
    """The declared setting ``part``.``name`` (a field name, e.g. ``timing``, ``min_time_s``)."""
    for spec in settings():
        if (spec.part, spec.name) == (part, name):
            return spec
    raise KeyError(f"no setting {part}.{name}")


def checked(check: Check, raw: Any, where: str) -> Any:
    """``raw`` through a setting's checker; ``where`` names the source in the one-line error
    (an option such as ``--threads`` or ``plan p.toml: [sweep] threads``)."""
    try:
        return check(raw)
    except ValueError as exc:
        raise UserError(f"{where}: {exc}") from None


def assign(config: RunConfig, spec: SettingSpec, raw: Any, where: str) -> None:
    """Check ``raw`` with the setting's checker and store it (``where``: see ``checked``)."""
    setattr(getattr(config, spec.part), spec.name, checked(spec.check, raw, where))


def stored_settings(stored: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """The settings a run.json holds under ``"config"``, by (part, field name). A run stored
    before the fields carried their units has some under the typed name (``min_time`` for
    ``min_time_s``): both are read."""
    found: dict[tuple[str, str], Any] = {}
    for spec in settings():
        part = stored.get(spec.part)
        if not isinstance(part, dict):
            continue
        for key in (spec.name, spec.typed):
            if key in part:
                found[spec.part, spec.name] = part[key]
                break
    return found


def from_options(options: dict[str, Any]) -> RunConfig:
    """A configuration from click's parsed values (``dest`` -> raw value or None/())."""
    config = RunConfig()
    for spec in settings():
        if spec.option is None or spec.dest not in options:
            continue
        raw = options[spec.dest]
        if raw is None or raw == () or raw is False:
            continue
        assign(config, spec, raw, spec.option)
    return config
