"""A model given as a .tflite: its ONNX twin, and which file each framework's cell runs.

The twin (``converters/onnx_from_tflite.py``, through the artifact cache) is the model every
framework converts from and ONNX Runtime's reference runs; tflite runs the original file at
fp32 and at the precision the file holds (int8 for a quantized .tflite). With
``--from-tflite direct``, OpenVINO and MNN convert the .tflite itself
(``converters/tflite_direct.py``), at fp32, fp16 and the file's own quantized precision.
Before the twin is trusted as the reference, its outputs are checked against LiteRT on the
original (``measure/twin_check.py``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebench.converters import ArtifactCache, ConversionError, ConversionOptions, Converter
from edgebench.converters.artifact_cache import file_sha256
from edgebench.converters.artifact_precision import QUANTIZED, read_precision
from edgebench.converters.onnx_from_tflite import REPORT_FILE, OnnxFromTfliteConverter
from edgebench.converters.tflite_direct import DIRECT, DIRECT_CONVERTERS

if TYPE_CHECKING:
    from edgebench.planning.modelref import ModelRef

log = logging.getLogger(__name__)

#: ``--from-tflite``: every framework from the twin, or OpenVINO and MNN from the file itself.
ROUTES = ("onnx", "direct")
#: The precisions a direct conversion makes; others go through the twin.
DIRECT_PRECISIONS = ("fp32", "fp16")

#: The record's ``artifact.route``: how the file a cell ran was made.
TWIN_ROUTE = "onnx-twin"
DIRECT_ROUTE = "direct"
ORIGINAL_ROUTE = "original"


@dataclass(frozen=True)
class TfliteOrigin:
    """Where a model given as a .tflite came from, and its twin."""

    path: Path  # the .tflite the user gave
    sha256: str
    twin: Path  # the ONNX twin, in the artifact cache
    twin_sha256: str
    reader: str  # the reader's version
    route: str = "onnx"  # --from-tflite
    dequantized: bool = False  # int8 tensors of the .tflite were dequantized in the twin
    warnings: tuple[str, ...] = ()
    #: The precision the .tflite holds (``converters/artifact_precision.py``): fp32, fp16,
    #: int8 or int8-weights.
    precision: str = "fp32"


def make_twin(tflite: Path, cache: Path, route: str = "onnx") -> TfliteOrigin:
    """The .tflite's ONNX twin, converted once per file and reader version; ConversionError
    when it cannot be made (the message says why)."""
    converter = OnnxFromTfliteConverter()
    sha256 = file_sha256(tflite)
    artifact = ArtifactCache(cache / "artifacts").convert(
        converter, tflite, sha256, ConversionOptions()
    )
    report = _report(artifact.path / REPORT_FILE)
    origin = TfliteOrigin(
        path=tflite,
        sha256=sha256,
        twin=artifact.primary,
        twin_sha256=artifact.manifest["files"][0]["sha256"],
        reader=converter.version(),
        route=route,
        dequantized=bool(report.get("dequantized")),
        warnings=tuple(str(w) for w in report.get("warnings") or ()),
        precision=read_precision(tflite, "tflite").precision or "fp32",
    )
    if not artifact.cached:
        log.info("%s -> ONNX twin %s (%s)", tflite.name, origin.twin, artifact.manifest["log"])
    if origin.dequantized:
        log.warning(
            "warning: %s is an int8 .tflite: its ONNX twin is a float model (int8 tensors "
            "dequantized), so the frameworks that convert from the twin measure float at fp32 "
            "(tflite and --from-tflite direct run the int8 file, recorded as int8)",
            tflite.name,
        )
    return origin


def _report(path: Path) -> dict[str, Any]:
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return report if isinstance(report, dict) else {}


def twin_problem(tflite: Path, exc: ConversionError) -> str:
    """Why a .tflite has no twin, and what is measured instead: one line."""
    return (
        f"{tflite.name} has no ONNX twin ({exc.message}); only tflite measures it, "
        "unchecked unless its ONNX model is given with --reference"
    )


def cell_model(model: ModelRef, framework: str, precision: str) -> ModelRef:
    """The model as ``framework``'s cell runs it: tflite at fp32, and at the quantized
    precision the .tflite holds, runs the original .tflite (checked against the twin on ONNX
    Runtime); everything else the twin. An int8 file's fp32 cell is recorded as int8
    (``planning/prepare.py``, ``settle_precisions``)."""
    origin = getattr(model, "tflite", None)  # duck-typed models in tests have none
    if origin is None or framework != "tflite" or precision not in original_precisions(origin):
        return model
    return replace(model, path=origin.path, format="tflite", sha256=origin.sha256, companions=[])


def original_precisions(origin: TfliteOrigin) -> tuple[str, ...]:
    """The cell precisions at which a cell reads the .tflite itself (LiteRT's original, the
    direct route): fp32, and the quantized precision the file holds."""
    own = (origin.precision,) if origin.precision in QUANTIZED else ()
    return ("fp32", *own)


def check_precision(model: ModelRef, precision: str) -> str:
    """The precision whose output-check rule applies to a cell of ``model``: an int8 .tflite
    that LiteRT runs as it is, against its dequantized (float) twin, is held to the fp16 rule,
    as the twin itself is against LiteRT (``twin_check``)."""
    origin = getattr(model, "tflite", None)
    if origin is not None and origin.dequantized and model.format == "tflite":
        return "fp16"
    return precision


def direct_conversion(model: ModelRef, fmt: str | None, precision: str) -> Converter | None:
    """The converter that reads the .tflite itself, when ``--from-tflite direct`` applies to
    this cell (OpenVINO and MNN, fp32, fp16 and the file's own quantized precision, which
    the conversion keeps); None: convert from the twin."""
    origin = getattr(model, "tflite", None)  # duck-typed models in tests have none
    if origin is None or origin.route != "direct" or fmt not in DIRECT_CONVERTERS:
        return None
    if precision not in {*DIRECT_PRECISIONS, *original_precisions(origin)}:
        return None
    return DIRECT_CONVERTERS[fmt]()


def route_of(model: ModelRef, converter_version: str | None) -> str | None:
    """``artifact.route`` of a cell of ``model`` whose artifact a converter of that version
    made (None: the cell ran its model file as it is); None for a model not from a .tflite."""
    if getattr(model, "tflite", None) is None:
        return None
    if converter_version and converter_version.endswith(DIRECT):
        return DIRECT_ROUTE
    if converter_version is None and model.format == "tflite":
        return ORIGINAL_ROUTE
    return TWIN_ROUTE
