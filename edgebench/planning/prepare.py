"""Convert every model a plan needs, once, before any cell is measured."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from edgebench.converters import ArtifactCache, ConversionError, ConversionOptions, get_converter
from edgebench.converters.base import CALIBRATED_PRECISIONS
from edgebench.planning.cells import Cell
from edgebench.planning.config import RunConfig
from edgebench.planning.tflite_origin import direct_conversion
from edgebench.quantization import QUANTIZED_PRECISIONS
from edgebench.quantization.calibration import (
    CalibrationConfig,
    CalibrationSets,
    CalibrationUnavailable,
)
from edgebench.statuses import ErrorKind, Status

# ConversionError kind -> the status of the cells that needed the artifact.
_STATUS_OF_KIND = {
    ErrorKind.UNSUPPORTED_OP: Status.UNSUPPORTED,
    ErrorKind.UNSUPPORTED_PRECISION: Status.UNSUPPORTED,
    ErrorKind.TOOLCHAIN_MISSING: Status.SKIPPED,
}


def conversion_options(cell: Cell) -> ConversionOptions:
    # The set goes only to conversions that calibrate (int8-weights evaluates on it, no more).
    calibrates = cell.quantization is not None and cell.precision in CALIBRATED_PRECISIONS
    calibration = cell.quantization.calibration if calibrates else None
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
) -> None:
    """Give every quantized cell its model's calibration and evaluation sets; a set that
    cannot feed the model fails the cells that need it, with the reason, and no others."""
    problems: dict[str, str] = {}
    for cell in cells:
        if cell.precision not in QUANTIZED_PRECISIONS or cell.verdict is not None:
            continue
        key = repr(cell.inputs)
        if key not in problems:
            try:
                cell.quantization = calibration.prepared(cell.inputs or [])
                continue
            except CalibrationUnavailable as exc:
                problems[key] = str(exc)
                report(f"calibration for {cell.model.name}: {exc}")
        cell.verdict = (Status.FAILED, ErrorKind.BAD_SPEC, problems[key])


def prepare_cells(
    cells: Sequence[Cell],
    cache: ArtifactCache,
    *,
    force: bool = False,
    report: Callable[[str], None] = lambda _: None,
    choices: Mapping[str, str] | None = None,
    calibration: CalibrationSets | None = None,
) -> int:
    """Attach artifacts to the cells that need one; returns how many conversions ran.

    A conversion that fails decides the verdict of every cell that needed it; the other cells
    are untouched. ``choices`` picks a converter per format (``CONVERTER_CHOICES``);
    ``calibration`` gives quantized cells their sets first (``attach_calibration``).
    """
    if calibration is not None:
        attach_calibration(cells, calibration, report)
    done: dict[tuple, object] = {}
    converted = 0
    for cell in cells:
        if cell.convert_to is None or cell.verdict is not None:
            continue
        if cell.precision in CALIBRATED_PRECISIONS and cell.quantization is None:
            cell.verdict = (Status.FAILED, ErrorKind.BAD_SPEC, "int8 cell without calibration")
            continue
        options = conversion_options(cell)
        # --from-tflite direct: OpenVINO and MNN read the .tflite, not its ONNX twin.
        direct = direct_conversion(cell.model, cell.convert_to, cell.precision)
        source, sha256 = cell.model.path, cell.model.sha256
        if direct is not None and cell.model.tflite is not None:
            source, sha256 = cell.model.tflite.path, cell.model.tflite.sha256
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
            cell.verdict = outcome
        else:
            cell.artifact = outcome
    return converted
