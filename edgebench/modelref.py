"""Turn what the user typed (a built-in name or a path) into a model the plan can use."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import onnx

from .errors import UserError
from .models import BUILTIN_MODELS, TensorSpec, builtin_model_path, summarize_model


@dataclass
class ModelRef:
    """A model ready to plan with, or the reason it cannot be used (kept per cell)."""

    name: str
    source: str  # what the user typed
    path: Path | None = None
    sha256: str | None = None
    inputs: list[TensorSpec] = field(default_factory=list)
    error: str | None = None


@dataclass(frozen=True)
class ShapeOverride:
    input_name: str | None  # None: applies to a model with a single dynamic input
    shape: tuple[int, ...]


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


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


def resolve_model(source: str, cache: Path) -> ModelRef:
    """Never raises for a bad model file: the error travels with the model to its cells."""
    if source in BUILTIN_MODELS:
        path = builtin_model_path(source, cache / "models")
        name = source
    else:
        path = Path(source).expanduser()
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
    try:
        proto = onnx.load(str(path), load_external_data=False)
        summary = summarize_model(proto)
    except Exception as exc:  # protobuf raises DecodeError and friends
        first = str(exc).strip().splitlines()[:1] or [type(exc).__name__]
        return ModelRef(
            name,
            source,
            path,
            error=f"model {source!r} is not a readable ONNX file ({first[0]}); "
            "re-export it or check the download",
        )
    return ModelRef(name, source, path, sha256_file(path), list(summary.inputs))


def resolve_models(sources: Sequence[str], cache: Path) -> list[ModelRef]:
    refs = [resolve_model(s, cache) for s in sources]
    seen: dict[str, int] = {}
    for ref in refs:
        seen[ref.name] = seen.get(ref.name, 0) + 1
    for ref in refs:
        if seen[ref.name] > 1:
            ref.name = ref.source  # two files called model.onnx stay distinguishable
    return refs


def input_shapes(ref: ModelRef, overrides: Sequence[ShapeOverride]) -> list[dict]:
    """Concrete inputs for the runner; a dynamic dimension left open is a UserError."""
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
