"""Run plans for nightly runs: a TOML file that fills the run configuration.

A plan's keys are the run configuration's settings (``edgebench.planning.config``), read
through the same checkers as the command line: the top level names the plan, its lab and the
devices, models and frameworks; ``[sweep]``, ``[timing]``, ``[breakdown]``, ``[telemetry]``,
``[checks]``, ``[quantization]`` and ``[thresholds]`` hold the rest (one table per part of the
configuration that has plan keys). A plan decides the matrix: devices, threads, cores, precision
and concurrency come from the plan (or their defaults), models and frameworks when it names
them. Every other key it sets overrides the command line; keys it leaves out keep their
command-line values.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.errors import UserError
from edgebench.lab.toml_input import has_breaks
from edgebench.models import BUILTIN_MODELS
from edgebench.planning.config import RunConfig, SettingSpec, assign, settings

PLAN_SCHEMA = "edgebench.plan/1"
#: Sweep settings a plan always decides (its value, else the default).
DECIDED_BY_PLAN = ("devices", "threads", "cores", "precision", "concurrency")


@dataclass(frozen=True)
class Plan:
    name: str
    path: Path
    lab: Path | None = None
    #: (part, setting) -> checked value, for every key the plan file sets.
    values: dict[tuple[str, str], Any] = field(default_factory=dict)

    def get(self, part: str, name: str, default: Any = None) -> Any:
        return self.values.get((part, name), default)

    @property
    def models(self) -> list[str]:
        return self.get("sweep", "models", [])

    @property
    def min_effect(self) -> float:
        return self.get("thresholds", "min_effect", 0.05)

    @property
    def alpha(self) -> float:
        return self.get("thresholds", "alpha", 0.01)

    @property
    def metric(self) -> str:
        return self.get("thresholds", "metric", "p50")

    def apply(self, config: RunConfig) -> RunConfig:
        """Fill ``config`` (from the command line) with this plan; see the module doc."""
        for spec in settings():
            if spec.plan_key is None:
                continue
            if (spec.part, spec.name) in self.values:
                setattr(getattr(config, spec.part), spec.name, self.values[spec.part, spec.name])
            elif spec.part == "sweep" and spec.name in DECIDED_BY_PLAN:
                default = spec.default
                setattr(
                    config.sweep, spec.name, list(default) if isinstance(default, list) else default
                )
        config.session.lab = self.lab or config.session.lab
        config.plan_name = self.name
        return config


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


def _read_toml(path: Path) -> dict[str, Any]:
    if path.is_dir():
        raise UserError(f"plan {path}: is a folder; give the plan's .toml file")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"plan {path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"plan {path}: cannot read it ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"plan {path.name}: not valid TOML ({exc})") from None


def load_plan(path: Path) -> Plan:
    data = _read_toml(path)
    by_table: dict[str, dict[str, SettingSpec]] = {}
    for spec in settings():
        if spec.plan_table is not None and spec.plan_key is not None:
            by_table.setdefault(spec.plan_table, {})[spec.plan_key] = spec
    tables = sorted(t for t in by_table if t)
    _check_keys(path, data, {"schema", "name", "lab", *by_table[""], *tables}, "top level")
    if data.get("schema", PLAN_SCHEMA) != PLAN_SCHEMA:
        raise _fail(path, "schema", f"{data['schema']!r} is not {PLAN_SCHEMA!r}")
    name = data.get("name") or path.stem
    if not isinstance(name, str):
        raise _fail(path, "name", "must be a string")
    if has_breaks(name):
        # Printed with every comparison: a line break or an escape sequence would forge output.
        raise _fail(path, "name", f"{name!r} contains a control character; give a one-line name")

    scratch = RunConfig()
    values: dict[tuple[str, str], Any] = {}
    for table in ["", *tables]:
        content = data if table == "" else data.get(table, {})
        where = "top level" if table == "" else f"[{table}]"
        if not isinstance(content, dict):
            raise _fail(path, where, "must be a table")
        if table:
            _check_keys(path, content, set(by_table[table]), where)
        for key, spec in by_table[table].items():
            if key not in content:
                continue
            label = key if table == "" else f"[{table}] {key}"
            raw = content[key]
            if getattr(spec.check, "metavar", "") == "PATH":
                raw = _in_plan_folder(path, raw)
            assign(scratch, spec, raw, f"plan {path.name}: {label}")
            value = getattr(getattr(scratch, spec.part), spec.name)
            if (spec.part, spec.name) == ("sweep", "models"):
                value = [m if m in BUILTIN_MODELS else _in_plan_folder(path, m) for m in value]
            values[spec.part, spec.name] = value
    return Plan(name=name, path=path, lab=_lab_path(path, data.get("lab")), values=values)


def _in_plan_folder(path: Path, value: Any) -> Any:
    """A relative path a plan gives (models, [checks] input, lab, ...) is relative to the
    plan's folder, wherever the run starts; other values are left to their checker."""
    if not isinstance(value, str) or not value.strip() or value.startswith("~"):
        return value
    return value if Path(value).is_absolute() else str(path.parent / value)


def _lab_path(path: Path, lab: Any) -> Path | None:
    """The plan's lab file (relative to the plan's folder), which must exist."""
    if lab is None:
        return None
    if not isinstance(lab, str) or not lab.strip():
        raise _fail(path, "lab", "must be a path")
    if has_breaks(lab):
        raise _fail(path, "lab", f"{lab!r} contains a control character")
    try:
        lab_path = Path(_in_plan_folder(path, lab)).expanduser()
    except RuntimeError as exc:  # "~user" with no such user
        raise _fail(path, "lab", f"cannot expand {lab!r} ({exc})") from None
    if not lab_path.is_file():
        where = "" if Path(lab).expanduser().is_absolute() else ", relative to the plan's folder"
        reason = "is a folder" if lab_path.is_dir() else "does not exist"
        raise _fail(path, "lab", f"{str(lab_path)!r}{where} {reason}; give the lab's .toml file")
    return lab_path
