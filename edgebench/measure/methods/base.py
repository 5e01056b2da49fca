"""The measurement method protocol: how one cell is measured on its device.

A device measures through one method, chosen once from its lab entry's ``runner`` kind
(``edgebench.measure.methods.method_for``). The scheduler only calls ``visit``, with the cell
(a value) and the live device it names; planning asks ``availability`` while it builds the
cells. Adding a method is adding a module and one entry in
``METHODS``; the scheduler does not change.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from edgebench.lab.device import Device
from edgebench.measure.output_check import CheckSettings
from edgebench.planning.cells import Cell, Verdict
from edgebench.results.breakdown_parts import Stages
from edgebench.results.records import Record


@dataclass(frozen=True)
class Visit:
    """What a method needs besides the cell: the run, the check settings, and whether this
    visit compares outputs (the later rounds of an interleaved cell do not)."""

    run_id: str
    checks: CheckSettings = field(default_factory=CheckSettings)
    check_outputs: bool = True


class Method(Protocol):
    @property
    def kind(self) -> str:
        """The lab entry's ``runner`` value that selects this method (read-only, so a
        method may declare it as a RunnerKind)."""

    def availability(self, device: Device, framework: str) -> Verdict | None:
        """None when ``framework`` can be measured on ``device``, else the cell's verdict."""

    def visit(self, cell: Cell, device: Device, visit: Visit) -> Record:
        """Measure ``cell`` once on ``device`` (the live session of the device the cell names).
        A dropped connection raises TransportError."""


def model_files(cell: Cell) -> list[Path]:
    """The files the device needs for the cell: the converted artifact, or the model."""
    if cell.artifact is not None:
        return [cell.artifact.path / name for name in cell.artifact.files]
    assert cell.model.path is not None
    return [cell.model.path, *cell.model.companions]


def whole_inference_refusal(cell: Cell, runner: str) -> str | None:
    """Why a runner that times whole inferences in one instance cannot measure ``cell``."""
    if cell.instances > 1:
        return f'{runner} does not load several instances; use runner = "python"'
    if cell.shape_from:
        return f'{runner} does not time a shape change; use runner = "python"'
    return None


def note_whole_inference(record: Record, cell: Cell, runner: str) -> Record:
    """``record`` saying that ``runner`` has no stage times (when stages were asked for)."""
    if cell.stages and record.stages is None:
        return replace(record, stages=Stages(unavailable=f"{runner} times whole inferences only"))
    return record
