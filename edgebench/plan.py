"""Expand the user's choices into cells: one cell is one measurement on one device."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .cores import resolve_cores
from .device import Device
from .errors import UserError
from .modelref import ModelRef, ShapeOverride, input_shapes
from .runners.backends import KNOWN_FRAMEWORKS, install_hint

SPEC_SCHEMA = "edgebench.spec/1"


@dataclass(frozen=True)
class Timing:
    warmup: int = 10
    iterations: int = 100
    min_time_s: float = 2.0
    max_time_s: float = 120.0
    timeout_s: float = 600.0


@dataclass
class Cell:
    device: Device
    model: ModelRef
    framework: str
    precision: str
    threads: int
    cores_selection: str
    cores: list[int] | None
    concurrency: int
    inputs: list[dict[str, Any]]
    timing: Timing
    skip_reason: str | None = None

    @property
    def cell_id(self) -> str:
        return "/".join(
            [
                self.device.name,
                self.model.name,
                self.framework,
                self.precision,
                f"t{self.threads}",
                f"c{self.cores_selection}",
                f"s{self.concurrency}",
            ]
        )

    def spec(self, seed: int = 0) -> dict[str, Any]:
        """The runner's JSON spec (runners/runner.py documents each field)."""
        return {
            "schema": SPEC_SCHEMA,
            "model": str(self.model.path),
            "framework": self.framework,
            "precision": self.precision,
            "threads": self.threads,
            "cores": self.cores,
            "warmup": self.timing.warmup,
            "iterations": self.timing.iterations,
            "min_time_s": self.timing.min_time_s,
            "max_time_s": self.timing.max_time_s,
            "concurrency": self.concurrency,
            "inputs": self.inputs,
            "seed": seed,
        }


def check_frameworks(names: Sequence[str]) -> list[str]:
    unknown = [n for n in names if n not in KNOWN_FRAMEWORKS]
    if unknown:
        raise UserError(
            f"unknown framework {', '.join(unknown)}; choose from {', '.join(KNOWN_FRAMEWORKS)}"
        )
    return list(dict.fromkeys(names))


def resolve_inputs(
    models: Sequence[ModelRef], shapes: Sequence[ShapeOverride]
) -> dict[str, list[dict[str, Any]]]:
    """Concrete input shapes per usable model, by model name.

    Called before any device is contacted, so a missing --shape fails the plan at once
    instead of after an hour of measurements.
    """
    return {m.name: input_shapes(m, shapes) for m in models if m.error is None}


def build_cells(
    devices: Sequence[Device],
    models: Sequence[ModelRef],
    frameworks: Sequence[str],
    *,
    inputs: dict[str, list[dict[str, Any]]],
    threads: Sequence[int],
    cores: Sequence[str],
    concurrency: int,
    precision: str,
    timing: Timing,
) -> list[Cell]:
    """Every combination, in device > model > framework > threads > cores order."""
    cells = []
    for device in devices:
        facts = device.facts()
        core_sets = [
            (sel, resolve_cores(sel, facts.cpus, facts.clusters, device.name)) for sel in cores
        ]
        for model in models:
            for framework in frameworks:
                skip = None
                if not facts.framework_available(framework):
                    skip = f"{framework} not installed on {device.name} ({install_hint(framework)})"
                    info = facts.frameworks.get(framework, {})
                    if info.get("reason") not in (None, "not_installed"):
                        skip = f"{framework} unavailable on {device.name}: {info.get('message')}"
                for n_threads in threads:
                    for selection, cpu_ids in core_sets:
                        cells.append(
                            Cell(
                                device=device,
                                model=model,
                                framework=framework,
                                precision=precision,
                                threads=n_threads,
                                cores_selection=selection,
                                cores=cpu_ids,
                                concurrency=concurrency,
                                inputs=inputs.get(model.name, []),
                                timing=timing,
                                skip_reason=skip,
                            )
                        )
    return cells
