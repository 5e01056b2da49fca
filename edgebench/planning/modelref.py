"""Turn what the user typed (a built-in name or a path) into a model the plan can use."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import onnx

from edgebench.converters import artifact_format
from edgebench.converters.artifact_cache import file_sha256
from edgebench.errors import UserError
from edgebench.models import BUILTIN_MODELS, TensorSpec, builtin_model_path, summarize_model


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
            overrides.append(ShapeOverride(name.strip() if sep else None, shape))
    return overrides


def _is_static(spec: TensorSpec) -> bool:
    return all(isinstance(d, int) and d > 0 for d in spec.shape)


def _read_onnx(ref: ModelRef, path: Path, label: str) -> list[TensorSpec] | None:
    try:
        proto = onnx.load(str(path), load_external_data=False)
        return list(summarize_model(proto).inputs)
    except Exception as exc:  # protobuf raises DecodeError and friends
        first = str(exc).strip().splitlines()[:1] or [type(exc).__name__]
        ref.error = (
            f"{label} {str(path)!r} is not a readable ONNX file ({first[0]}); "
            "re-export it or check the download"
        )
        return None


def _resolve_artifact(
    source: str, path: Path, fmt: str, companion: Path | None, reference: Path | None
) -> ModelRef:
    ref = ModelRef(path.stem, source, path, format=fmt)
    if companion is not None:
        if not companion.is_file():
            ref.error = f"{fmt} model {source!r} needs {companion.name} beside it; copy both files"
            return ref
        ref.companions = [companion]
    digest = hashlib.sha256()
    for part in [path, *ref.companions]:
        digest.update(file_sha256(part).encode())
    ref.sha256 = digest.hexdigest()
    if reference is not None:
        if not reference.is_file():
            ref.error = f"--reference {str(reference)!r}: not found"
            return ref
        inputs = _read_onnx(ref, reference, "--reference")
        if inputs is None:
            return ref
        ref.inputs = inputs
        ref.reference = reference
    return ref


def resolve_model(source: str, cache: Path, reference: Path | None = None) -> ModelRef:
    """Never raises for a bad model file: the error travels with the model to its cells."""
    if source in BUILTIN_MODELS:
        path = builtin_model_path(source, cache / "models")
        name = source
    else:
        try:
            path = Path(source).expanduser().absolute()
        except RuntimeError:  # "~user/..." with no such user
            path = Path(source).absolute()
        name = path.stem if path.suffix == ".onnx" else path.name
        if not path.is_file():
            known = ", ".join(BUILTIN_MODELS)
            reason = "not found" if not path.exists() else "not a file"
            return ModelRef(
                name,
                source,
                path,
                error=f"model {source!r}: {reason} (built-in models: {known}; "
                "or give the path of an .onnx file)",
            )
        artifact = artifact_format(path)
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
    sources: Sequence[str], cache: Path, reference: Path | None = None
) -> list[ModelRef]:
    refs = [resolve_model(s, cache, reference) for s in sources]
    seen: dict[str, int] = {}
    for ref in refs:
        seen[ref.name] = seen.get(ref.name, 0) + 1
    for ref in refs:
        if seen[ref.name] > 1:
            ref.name = ref.source  # two files called model.onnx stay distinguishable
    return refs


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
            shape = tuple(int(d) for d in spec.shape)
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
