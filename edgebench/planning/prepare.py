"""Convert every model a plan needs, once, before any cell is measured; then record each cell
at the precision of the file it runs."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from edgebench.converters import (
    Artifact,
    ArtifactCache,
    ConversionError,
    ConversionOptions,
    get_converter,
)
from edgebench.converters.artifact_precision import FilePrecision, ran_precision, read_precision
from edgebench.converters.base import CALIBRATED_PRECISIONS
from edgebench.planning.cells import Cell, Verdict
from edgebench.planning.config import RunConfig
from edgebench.planning.tflite_origin import direct_conversion
from edgebench.quantization import QUANTIZED_PRECISIONS
from edgebench.quantization.calibration import (
    CalibrationConfig,
    CalibrationSets,
    CalibrationUnavailable,
)
from edgebench.statuses import ErrorKind, Status

log = logging.getLogger(__name__)

# ConversionError kind -> the status of the cells that needed the artifact.
_STATUS_OF_KIND: dict[str, Status] = {
    ErrorKind.UNSUPPORTED_OP: Status.UNSUPPORTED,
    ErrorKind.UNSUPPORTED_PRECISION: Status.UNSUPPORTED,
    ErrorKind.TOOLCHAIN_MISSING: Status.SKIPPED,
}


def conversion_options(cell: Cell) -> ConversionOptions:
    # The set goes only to conversions that calibrate (int8-weights evaluates on it, no more).
    quantization = cell.quantization
    calibrates = quantization is not None and cell.precision in CALIBRATED_PRECISIONS
    calibration = quantization.calibration if quantization is not None and calibrates else None
    dynamic = cell.shape_mode == "dynamic"
    # A dynamic artifact serves every shape of the sweep: one conversion, keyed on its first.
    shaped = cell.shape_base if dynamic and cell.shape_base else cell.inputs
    return ConversionOptions(
        precision=cell.precision,
        dynamic=dynamic,
        input_shapes={i["name"]: list(i["shape"]) for i in shaped},
        calibration=calibration.path if calibration else None,
        calibration_sha256=calibration.sha256 if calibration else None,
    )


def calibration_sets(config: RunConfig) -> CalibrationSets:
    """The run's calibration and evaluation sets (prepared lazily, once per model)."""
    q = config.quantization
    return CalibrationSets(
        CalibrationConfig(
            calibration=q.calibration,
            eval=q.eval,
            preprocess=config.checks.preprocess,
            calibration_samples=q.calibration_samples,
            eval_samples=q.eval_samples,
        )
    )


def _calibrating(cell: Cell) -> str:
    if cell.quantization is None or cell.precision not in CALIBRATED_PRECISIONS:
        return ""
    return f", calibrating on {cell.quantization.calibration.n} samples"


def attach_calibration(
    cells: Sequence[Cell],
    calibration: CalibrationSets,
    report: Callable[[str], None] = lambda _: None,
) -> list[Cell]:
    """The cells, every quantized one with its model's calibration and evaluation sets; a set
    that cannot feed the model fails the cells that need it, with the reason, and no others."""
    problems: dict[str, str] = {}
    out = []
    for cell in cells:
        if (
            cell.precision not in QUANTIZED_PRECISIONS
            or cell.verdict is not None
            or cell.quantization is not None
        ):
            out.append(cell)
            continue
        key = repr(cell.inputs)
        if key not in problems:
            try:
                out.append(replace(cell, quantization=calibration.prepared(cell.inputs or [])))
                continue
            except CalibrationUnavailable as exc:
                problems[key] = str(exc)
                report(f"calibration for {cell.model.name}: {exc}")
        out.append(replace(cell, verdict=(Status.FAILED, ErrorKind.BAD_SPEC, problems[key])))
    return out


@dataclass(frozen=True)
class Prepared:
    """The plan's cells once prepared, and how many conversions that took."""

    cells: list[Cell]
    conversions: int


def prepare_cells(
    cells: Sequence[Cell],
    cache: ArtifactCache,
    *,
    force: bool = False,
    report: Callable[[str], None] = lambda _: None,
    choices: Mapping[str, str] | None = None,
    calibration: CalibrationSets | None = None,
) -> Prepared:
    """The cells, each that needs one with its artifact, and how many conversions ran.

    A conversion that fails decides the verdict of every cell that needed it; the other cells
    are returned as they came. ``choices`` picks a converter per format
    (``CONVERTER_CHOICES``); ``calibration`` gives quantized cells their sets first
    (``attach_calibration``).
    """
    if calibration is not None:
        cells = attach_calibration(cells, calibration, report)
    done: dict[tuple, Artifact | Verdict] = {}
    converted = 0
    out = []
    for cell in cells:
        if cell.convert_to is None or cell.verdict is not None:
            out.append(cell)
            continue
        if cell.precision in CALIBRATED_PRECISIONS and cell.quantization is None:
            out.append(
                replace(
                    cell,
                    verdict=(Status.FAILED, ErrorKind.BAD_SPEC, "int8 cell without calibration"),
                )
            )
            continue
        options = conversion_options(cell)
        # --from-tflite direct: OpenVINO and MNN read the .tflite, not its ONNX twin.
        direct = direct_conversion(cell.model, cell.convert_to, cell.precision)
        source, sha256 = cell.model.path, cell.model.sha256
        if direct is not None and cell.model.tflite is not None:
            source, sha256 = cell.model.tflite.path, cell.model.tflite.sha256
        # A model that did not resolve gets no cells, so every cell's model has both.
        assert source is not None and sha256 is not None, cell.model.name
        key = (sha256, cell.convert_to, repr(options))
        if key not in done:
            label = f"convert {cell.model.name} -> {cell.convert_to} ({cell.precision})"
            label += " from the .tflite" if direct is not None else ""
            try:
                converter = direct or get_converter(
                    cell.convert_to, (choices or {}).get(cell.convert_to)
                )
                artifact = None if force else cache.lookup(converter, sha256, options)
                if artifact is None:
                    # Calibration can take minutes: say what is happening before it starts.
                    report(f"{label}: converting{_calibrating(cell)}...")
                    artifact = cache.convert(converter, source, sha256, options, force=True)
            except ConversionError as exc:
                status = _STATUS_OF_KIND.get(exc.kind, Status.FAILED)
                done[key] = (status, exc.kind, exc.message)
                report(f"{label}: {status}: {exc.message}")
            else:
                done[key] = artifact
                if artifact.cached:
                    report(f"{label}: cached")
                else:
                    converted += 1
                    report(f"{label}: {artifact.manifest['time_s']:.2f} s")
        outcome = done[key]
        if isinstance(outcome, tuple):
            out.append(replace(cell, verdict=outcome))
        else:
            out.append(replace(cell, artifact=outcome))
    return Prepared(out, converted)


def file_precision(cell: Cell) -> FilePrecision | None:
    """The precision of the file ``cell`` runs, read from it; None before it is known."""
    if cell.artifact is not None:
        return read_precision(cell.artifact.primary, cell.artifact.format)
    if cell.convert_to is None and cell.model.path is not None:
        return read_precision(Path(cell.model.path), cell.model.format)
    return None


def settle_precisions(
    cells: Sequence[Cell],
    calibration: CalibrationSets | None = None,
    report: Callable[[str], None] = lambda _: None,
) -> list[Cell]:
    """The cells, each at the precision of the file it runs (the file's quantized tensors
    decide, not the option): a cell whose file holds another precision than the one asked
    for is recorded at the file's, with the asked one in ``precision_requested``, and one
    warning line per model, engine and precision says so. Where that makes two cells of one
    id, the one that ran what was asked is kept. A cell that became quantized gets the
    evaluation set its accuracy is judged on (``calibration``)."""
    evidence: dict[int, str] = {}
    settled = []
    for cell in cells:
        # A generative cell's precision is its GGUF's weight type, known when it was planned.
        found = file_precision(cell) if cell.verdict is None and cell.generation is None else None
        ran = ran_precision(cell.precision, found) if found is not None else cell.precision
        if found is not None and ran != cell.precision:
            cell = replace(
                cell,
                precision_requested=cell.precision,
                precision=ran,
                # A file that is not quantized gets no accuracy check on the evaluation set.
                quantization=cell.quantization if ran in QUANTIZED_PRECISIONS else None,
            )
            evidence[id(cell)] = found.evidence
        settled.append(cell)
    kept = _one_cell_per_id(settled)
    said: set[tuple[str, str, str]] = set()
    for cell in kept:
        key = (cell.model.name, cell.engine, cell.precision_requested or "")
        if id(cell) not in evidence or key in said:
            continue
        said.add(key)
        log.warning(
            "warning: %s on %s runs %s, which holds %s (%s), not the %s asked for: "
            "its cells are recorded as %s",
            cell.model.name,
            cell.engine,
            cell.run_path.name if cell.run_path is not None else "its file",
            cell.precision,
            evidence[id(cell)],
            cell.precision_requested,
            cell.precision,
        )
    if calibration is not None:
        kept = attach_calibration(kept, calibration, report)
    return kept


def _one_cell_per_id(cells: Sequence[Cell]) -> list[Cell]:
    """Cells in order, one per id: a relabelled cell gives way to one that ran what was asked
    (``--precision fp32,int8`` on an int8 file measures it once, at int8), with one warning
    line per model, engine and precision."""
    first: dict[str, Cell] = {}
    for cell in cells:
        held = first.get(cell.cell_id)
        if held is None or (held.precision_requested and not cell.precision_requested):
            first[cell.cell_id] = cell
    dropped = {
        (c.model.name, c.engine, c.precision, c.precision_requested or c.precision): None
        for c in cells
        if first[c.cell_id] is not c
    }
    for model, engine, precision, asked in dropped:
        log.warning(
            "warning: %s on %s is measured once, at %s: the file its %s cells run holds %s",
            model,
            engine,
            precision,
            asked,
            precision,
        )
    return [c for c in cells if first[c.cell_id] is c]


def precision_options(cells: Sequence[Cell], requested: Sequence[str]) -> dict[str, list[str]]:
    """run.json's ``options.precision``: the precisions the run's cells are recorded at, in
    the order asked, and the ones asked for as ``precision_requested`` when they differ."""
    ran = list(dict.fromkeys(c.precision for c in cells))
    ordered = [p for p in requested if p in ran] + [p for p in ran if p not in requested]
    if not cells or ordered == list(requested):
        return {"precision": list(requested)}
    return {"precision": ordered, "precision_requested": list(requested)}
