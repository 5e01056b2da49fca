"""Turn what the user typed (a built-in name or a path) into a model the plan can use."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx

from edgebench.converters import ConversionError, artifact_format
from edgebench.converters.artifact_cache import file_sha256
from edgebench.errors import UserError
from edgebench.models import BUILTIN_MODELS, TensorSpec, builtin_model_path, summarize_model
from edgebench.models.llm_cache import builtin_llm_path
from edgebench.models.llm_facts import read_llm_facts
from edgebench.models.llm_shapes import DEFAULT_WEIGHT_TYPE, GENERATIVE_MODELS
from edgebench.planning.limits import tensor_problem
from edgebench.planning.tflite_origin import TfliteOrigin, make_twin, twin_problem
from edgebench.runners.protocol.io_map import IO_MAP_FILE

log = logging.getLogger(__name__)


@dataclass
class ModelRef:
    """A model ready to plan with, or the reason it cannot be used (kept per cell)."""

    name: str
    source: str  # what the user typed
    path: Path | None = None
    sha256: str | None = None
    inputs: list[TensorSpec] = field(default_factory=list)
    error: str | None = None
    #: "onnx", or the format of a pre-converted artifact ("tflite", "mnn", "ncnn", ...).
    format: str = "onnx"
    #: The ONNX model whose ONNX Runtime outputs the output check compares against.
    reference: Path | None = None
    #: Files that travel with ``path`` (ncnn .bin, OpenVINO .bin, TNN .tnnmodel).
    companions: list[Path] = field(default_factory=list)
    #: A model given as a .tflite: the original and its ONNX twin (``path`` is the twin).
    tflite: TfliteOrigin | None = None
    #: A generative model (format ``gguf``): what its file says (architecture, sizes,
    #: context, vocabulary), read once when the model is resolved.
    llm: Any = None
    #: A generative model's weight type (``f16``, ``q8_0``, ``q4_0``): the precision its
    #: cells run at.
    precision: str | None = None


@dataclass(frozen=True)
class ShapeOverride:
    input_name: str | None  # None: applies to a model with a single dynamic input
    shape: tuple[int, ...]


def parse_shape_overrides(values: Sequence[str]) -> list[ShapeOverride]:
    """``1,3,640,640`` or ``images=1,3,640,640``; several may be separated by ';'."""
    overrides = []
    for value in values:
        for item in value.split(";"):
            item = item.strip()
            if not item:
                continue
            name, sep, dims = item.rpartition("=")
            try:
                shape = tuple(int(d) for d in dims.replace("x", ",").split(","))
            except ValueError:
                shape = ()
            if not shape or any(d <= 0 for d in shape):
                raise UserError(
                    f"--shape {item!r} is not a shape; use 1,3,640,640 or name=1,3,640,640"
                )
            too_big = tensor_problem(shape)
            if too_big:
                raise UserError(f"--shape {item!r}: {too_big}")
            overrides.append(ShapeOverride(name.strip() if sep else None, shape))
    return overrides


def _is_static(spec: TensorSpec) -> bool:
    return all(isinstance(d, int) and d > 0 for d in spec.shape)


def _read_onnx(ref: ModelRef, path: Path, label: str) -> list[TensorSpec] | None:
    """The model's inputs, or None with ``ref.error`` set. An empty file parses as an empty
    ModelProto, so it and a model without a graph are refused here, in one line, rather than
    by each framework in its own words."""
    fix = "re-export it or check the download"
    try:
        if path.stat().st_size == 0:
            ref.error = f"{label} {str(path)!r} is empty (0 bytes); {fix}"
            return None
        proto = onnx.load(str(path), load_external_data=False)
        summary = summarize_model(proto)
    except Exception as exc:  # protobuf raises DecodeError and friends
        first = str(exc).strip().splitlines()[:1] or [type(exc).__name__]
        ref.error = f"{label} {str(path)!r} is not a readable ONNX file ({first[0]}); {fix}"
        return None
    if not summary.outputs:
        ref.error = f"{label} {str(path)!r} has no graph outputs (not an ONNX model?); {fix}"
        return None
    return list(summary.inputs)


def _resolve_artifact(
    source: str, path: Path, fmt: str, companion: Path | None, reference: Path | None
) -> ModelRef:
    ref = ModelRef(path.stem, source, path, format=fmt)
    if companion is not None:
        if not companion.is_file():
            ref.error = f"{fmt} model {source!r} needs {companion.name} beside it; copy both files"
            return ref
        ref.companions = [companion]
    io_map = path.with_name(IO_MAP_FILE)
    if io_map.is_file():  # ncnn and TFLite artifacts: ONNX names and layouts, sent along
        ref.companions.append(io_map)
    digest = hashlib.sha256()
    for part in [path, *ref.companions]:
        digest.update(file_sha256(part).encode())
    ref.sha256 = digest.hexdigest()
    if reference is not None:
        if not reference.is_file():
            reason = "not found" if not reference.exists() else "not a file"
            raise UserError(f"--reference {str(reference)!r}: {reason}; give an .onnx file")
        inputs = _read_onnx(ref, reference, "--reference")
        if inputs is None:
            return ref
        ref.inputs = inputs
        ref.reference = reference
    return ref


def _resolve_tflite(source: str, path: Path, cache: Path, from_tflite: str) -> ModelRef:
    """A .tflite without --reference: measured through its ONNX twin, which every framework
    converts from and ONNX Runtime's reference runs (``tflite_origin``)."""
    try:
        origin = make_twin(path, cache, from_tflite)
    except ConversionError as exc:
        # LiteRT still runs the file as it is: the other frameworks are skipped.
        log.warning("warning: %s", twin_problem(path, exc))
        return _resolve_artifact(source, path, "tflite", None, None)
    ref = ModelRef(path.stem, source, origin.twin, tflite=origin)
    inputs = _read_onnx(ref, origin.twin, "ONNX twin")
    if inputs is None:
        return ref
    ref.sha256 = origin.twin_sha256
    ref.inputs = inputs
    ref.reference = origin.twin
    return ref


#: A generative model's file format, and the built-in generative models by name.
GGUF = "gguf"
GGUF_SUFFIX = ".gguf"
BUILTIN_LLMS: tuple[str, ...] = tuple(GENERATIVE_MODELS)


def gguf_ref(name: str, source: str, path: Path) -> ModelRef:
    """A generative model from its GGUF file, with what the file says of itself
    (``ModelRef.llm``); a file that is no usable GGUF keeps its error (the other models are
    still measured)."""
    ref = ModelRef(name, source, path, format=GGUF)
    try:
        ref.llm = read_llm_facts(path)
    except UserError as exc:
        ref.error = str(exc)
        return ref
    ref.precision = ref.llm.weight_type
    ref.sha256 = file_sha256(path)
    return ref


def builtin_llm_ref(name: str, cache: Path, weight_type: str = DEFAULT_WEIGHT_TYPE) -> ModelRef:
    """Built-in generative model ``name`` at ``weight_type``, written into the cache first
    when it is not there (edgebench/models/llm_cache.py)."""
    return gguf_ref(name, name, builtin_llm_path(name, cache / "models", weight_type))


def resolve_model(
    source: str, cache: Path, reference: Path | None = None, from_tflite: str = "onnx"
) -> ModelRef:
    """A path that is not a file is a UserError (a mistake in the invocation, found before
    any run exists). A file that is not a usable model never raises: the error travels with the
    model to its cells, so the other models are still measured. A .tflite without
    ``reference`` is measured through its ONNX twin (``from_tflite``: ``--from-tflite``)."""
    if source in BUILTIN_MODELS:
        path = builtin_model_path(source, cache / "models")
        name = source
    elif source in BUILTIN_LLMS:
        return builtin_llm_ref(source, cache)
    else:
        try:
            path = Path(source).expanduser().absolute()
        except RuntimeError:  # "~user/..." with no such user
            path = Path(source).absolute()
        name = path.stem if path.suffix == ".onnx" else path.name
        if not path.is_file():
            # A mistake in the invocation, not in a measurement: refused before any run exists.
            known = ", ".join([*BUILTIN_MODELS, *BUILTIN_LLMS])
            reason = "not found" if not path.exists() else "not a file"
            raise UserError(
                f"model {source!r}: {reason}; give a built-in model ({known}) "
                "or the path of an .onnx, .gguf or converted model file"
            )
        if path.suffix.lower() == GGUF_SUFFIX:
            return gguf_ref(path.stem, source, path)
        artifact = artifact_format(path)
        if artifact is not None and artifact[0] == "tflite" and reference is None:
            return _resolve_tflite(source, path, cache, from_tflite)
        if artifact is not None:
            return _resolve_artifact(source, path, artifact[0], artifact[1], reference)
    ref = ModelRef(name, source, path)
    inputs = _read_onnx(ref, path, "model")
    if inputs is None:
        return ref
    ref.sha256 = file_sha256(path)
    ref.inputs = inputs
    ref.reference = path
    return ref


def resolve_models(
    sources: Sequence[str], cache: Path, reference: Path | None = None, from_tflite: str = "onnx"
) -> list[ModelRef]:
    refs = [resolve_model(s, cache, reference, from_tflite) for s in sources]
    onnx_models = [r.name for r in refs if r.format == "onnx" and r.error is None]
    if reference is not None and onnx_models:
        log.warning(
            "warning: --reference %s is ignored for %s: an ONNX model is checked against "
            "itself (--reference is for pre-converted models such as .tflite or .mnn)",
            reference,
            ", ".join(onnx_models),
        )
    seen: dict[str, int] = {}
    for ref in refs:
        seen[ref.name] = seen.get(ref.name, 0) + 1
    for ref in refs:
        if seen[ref.name] > 1 and ref.source not in BUILTIN_MODELS:
            ref.name = _distinct_name(ref)
    return refs


def _distinct_name(ref: ModelRef) -> str:
    """Two files called model.onnx in different folders: the stem and a short hash of the
    path, a token without '/' for cell ids, labels and file names."""
    where = str(ref.path) if ref.path is not None else ref.source
    return f"{ref.name}-{hashlib.sha256(where.encode()).hexdigest()[:6]}"


def input_shapes(ref: ModelRef, overrides: Sequence[ShapeOverride]) -> list[dict]:
    """Concrete inputs for the runner; a dynamic dimension left open is a UserError.

    A pre-converted artifact without --reference has no ONNX inputs to read: the runner feeds
    the artifact's own input shapes.
    """
    named = {o.input_name: o.shape for o in overrides if o.input_name}
    unnamed = [o.shape for o in overrides if not o.input_name]
    dynamic = [spec for spec in ref.inputs if not _is_static(spec)]
    resolved = []
    for spec in ref.inputs:
        shape: tuple | None = named.get(spec.name)
        if shape is None and unnamed and not _is_static(spec) and len(dynamic) == 1:
            shape = unnamed[-1]
        if shape is not None:
            _check_override(ref, spec, shape)
        elif not _is_static(spec):
            dims = ",".join(str(d) if isinstance(d, int) and d > 0 else "?" for d in spec.shape)
            example = ",".join(str(d) if isinstance(d, int) and d > 0 else "N" for d in spec.shape)
            raise UserError(
                f"model {ref.name}: input {spec.name!r} has dynamic dimensions [{dims}]; "
                f"pass --shape {spec.name}={example} with numbers for N"
            )
        else:
            shape = tuple(d for d in spec.shape if isinstance(d, int))  # static: all ints
        resolved.append({"name": spec.name, "shape": list(shape), "dtype": spec.dtype})
    return resolved


def _check_override(ref: ModelRef, spec: TensorSpec, shape: tuple) -> None:
    if len(shape) != len(spec.shape):
        raise UserError(
            f"model {ref.name}: --shape for input {spec.name!r} has {len(shape)} dimensions, "
            f"the input has {len(spec.shape)}"
        )
    for given, declared in zip(shape, spec.shape, strict=True):
        if isinstance(declared, int) and declared > 0 and declared != given:
            raise UserError(
                f"model {ref.name}: input {spec.name!r} is fixed at "
                f"{list(spec.shape)}; --shape {list(shape)} does not fit it"
            )


def check_shape_overrides(models: Sequence[ModelRef], overrides: Sequence[ShapeOverride]) -> None:
    """Refuse a --shape that no model takes, instead of ignoring it.

    ``name=dims`` must name an input of some model. A shape without a name fills the one dynamic
    input of the models that have one; when no model has one, it must equal each model's
    (single, fixed) input, so ``--shape 1,3,100000,100000`` on a 224x224 model is an error
    rather than a run at 224.
    """
    usable = [m for m in models if m.error is None and m.inputs]
    if not usable:
        return  # nothing to check against (e.g. converted models without --reference)
    for override in overrides:
        shown = ",".join(str(d) for d in override.shape)
        if override.input_name:
            if not any(s.name == override.input_name for m in usable for s in m.inputs):
                inputs = "; ".join(
                    f"{m.name}: {', '.join(s.name for s in m.inputs)}" for m in usable
                )
                raise UserError(
                    f"--shape {override.input_name}={shown}: no model has an input named "
                    f"{override.input_name!r} (inputs: {inputs})"
                )
            continue
        if any(sum(not _is_static(s) for s in m.inputs) == 1 for m in usable):
            continue  # fills a dynamic input; fixed-shape models keep their own shapes
        for model in usable:
            if len(model.inputs) > 1:
                first = model.inputs[0]
                raise UserError(
                    f"--shape {shown}: model {model.name} has inputs "
                    f"{', '.join(s.name for s in model.inputs)}; name the one it is for "
                    f"(--shape {first.name}={shown})"
                )
            (spec,) = model.inputs
            try:
                _check_override(model, spec, override.shape)
            except UserError as exc:
                raise UserError(f"{exc} (--shape only sets dynamic dimensions)") from None
