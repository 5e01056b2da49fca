"""The settings of how a run behaves (lab, plan, resume, waiting, cluster): command line only."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edgebench.planning.checks import flag, optional, path, text
from edgebench.planning.setting import setting


@dataclass
class Session:
    """How the run itself behaves. Command line only."""

    lab: Path | None = setting(
        None,
        optional(path),
        "Lab inventory TOML [default: $EDGEBENCH_LAB, then ~/.config/edgebench/lab.toml].",
        plan=None,
    )
    plan: Path | None = setting(
        None,
        optional(path),
        "A run plan (TOML): matrix, sweeps, thresholds; compares with its last good run.",
        plan=None,
    )
    resume: str | None = setting(
        None,
        optional(text),
        "Continue a stopped run (same options): completed cells are not measured again.",
        plan=None,
    )
    no_wait: bool = setting(
        False,
        flag,
        "Fail at once when another edgebench run holds a device, instead of waiting.",
        plan=None,
    )
    cluster: str | None = setting(
        None,
        optional(text),
        "Measure on the devices of a Ray cluster, by the head's ADDRESS (host:port); "
        "--devices then takes names or selectors such as profile=kirin-9000 (docs/cluster.md).",
        plan=None,
    )
