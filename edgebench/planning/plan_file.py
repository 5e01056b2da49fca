"""Run plans for nightly runs: what to measure, and the thresholds that decide a regression."""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.errors import UserError

PLAN_SCHEMA = "edgebench.plan/1"
_TOP = {
    "schema",
    "name",
    "lab",
    "devices",
    "models",
    "frameworks",
    "sweep",
    "timing",
    "thresholds",
    "telemetry",
}
_SWEEP = {"threads", "cores", "precision", "concurrency"}
_TIMING = {"warmup", "iterations", "min_time", "max_time", "timeout"}
_THRESHOLDS = {"min_effect", "alpha", "metric"}
_METRICS = ("p50", "p90", "p95", "p99", "mean", "throughput", "energy", "memory")
_TELEMETRY = {"energy_source", "baseline_s", "period_s", "cooldown_temp", "cooldown_max_wait"}


@dataclass(frozen=True)
class Plan:
    name: str
    path: Path
    lab: Path | None = None
    devices: list[str] = field(default_factory=lambda: ["local"])
    models: list[str] = field(default_factory=list)
    frameworks: list[str] = field(default_factory=list)
    threads: list[int] = field(default_factory=lambda: [1])
    cores: list[str] = field(default_factory=lambda: ["all"])
    precisions: list[str] = field(default_factory=lambda: ["fp32"])
    concurrency: int = 1
    timing: dict[str, float] = field(default_factory=dict)
    min_effect: float = 0.05
    alpha: float = 0.01
    metric: str = "p50"
    telemetry: dict[str, Any] = field(default_factory=dict)


def _fail(path: Path, where: str, problem: str) -> UserError:
    return UserError(f"plan {path.name}: {where}: {problem}")


def _check_keys(path: Path, table: dict, known: set[str], where: str) -> None:
    for key in table:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise _fail(
                path, where, f"unknown key {key!r}{hint}; known: {', '.join(sorted(known))}"
            )


def _str_list(path: Path, value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _fail(path, where, "must be a list of strings")
    return list(value)


def load_plan(path: Path) -> Plan:
    if path.is_dir():
        raise UserError(f"plan {path}: is a folder; give the plan's .toml file")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"plan {path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"plan {path}: cannot read it ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"plan {path.name}: not valid TOML ({exc})") from None
    _check_keys(path, data, _TOP, "top level")
    if data.get("schema", PLAN_SCHEMA) != PLAN_SCHEMA:
        raise _fail(path, "schema", f"{data['schema']!r} is not {PLAN_SCHEMA!r}")
    name = data.get("name") or path.stem
    if not isinstance(name, str):
        raise _fail(path, "name", "must be a string")
    sweep = data.get("sweep", {})
    timing = data.get("timing", {})
    thresholds = data.get("thresholds", {})
    telemetry = data.get("telemetry", {})
    for table, known, where in (
        (sweep, _SWEEP, "[sweep]"),
        (timing, _TIMING, "[timing]"),
        (thresholds, _THRESHOLDS, "[thresholds]"),
        (telemetry, _TELEMETRY, "[telemetry]"),
    ):
        if not isinstance(table, dict):
            raise _fail(path, where, "must be a table")
        _check_keys(path, table, known, where)
    threads = sweep.get("threads", [1])
    threads = [threads] if isinstance(threads, int) else threads
    if not isinstance(threads, list) or not all(
        isinstance(t, int) and not isinstance(t, bool) and t >= 1 for t in threads
    ):
        raise _fail(path, "[sweep] threads", "must be whole numbers >= 1, e.g. [1, 4]")
    for key, value in timing.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise _fail(path, f"[timing] {key}", "must be a number >= 0")
    metric = thresholds.get("metric", "p50")
    if metric not in _METRICS:
        raise _fail(path, "[thresholds] metric", f"{metric!r} is not one of {', '.join(_METRICS)}")
    if timing.get("iterations", 1) < 1:
        raise _fail(path, "[timing] iterations", "must be at least 1")
    min_effect = thresholds.get("min_effect", 0.05)
    alpha = thresholds.get("alpha", 0.01)
    if not isinstance(min_effect, (int, float)) or not 0 <= min_effect < 1:
        raise _fail(path, "[thresholds] min_effect", "must be a fraction such as 0.05")
    if not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise _fail(path, "[thresholds] alpha", "must be between 0 and 1, e.g. 0.01")
    precisions = _str_list(path, sweep.get("precision", ["fp32"]), "[sweep] precision")
    bad = [p for p in precisions if p not in ("fp32", "fp16")]
    if bad:
        raise _fail(path, "[sweep] precision", f"{bad[0]!r} is not fp32 or fp16")
    lab = data.get("lab")
    lab_path = None
    if lab is not None:
        if not isinstance(lab, str):
            raise _fail(path, "lab", "must be a path")
        try:
            lab_path = Path(lab).expanduser()
        except RuntimeError as exc:  # "~user" with no such user
            raise _fail(path, "lab", f"cannot expand {lab!r} ({exc})") from None
        if not lab_path.is_absolute():
            lab_path = path.parent / lab_path
    concurrency = sweep.get("concurrency", 1)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise _fail(path, "[sweep] concurrency", "must be a whole number >= 1")
    return Plan(
        name=name,
        path=path,
        lab=lab_path,
        devices=_str_list(path, data.get("devices", ["local"]), "devices"),
        models=_str_list(path, data.get("models", []), "models"),
        frameworks=_str_list(path, data.get("frameworks", []), "frameworks"),
        threads=threads,
        cores=_str_list(path, sweep.get("cores", ["all"]), "[sweep] cores"),
        precisions=precisions,
        concurrency=concurrency,
        timing={k: float(v) for k, v in timing.items()},
        min_effect=float(min_effect),
        alpha=float(alpha),
        metric=str(metric),
        telemetry=dict(telemetry),
    )
