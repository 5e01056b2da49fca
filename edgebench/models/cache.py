"""On-disk cache of generated built-in models."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import onnx

from edgebench.models.registry import build_model, get_builtin
from edgebench.models.version import GENERATOR_VERSION


def model_bytes(model: onnx.ModelProto) -> bytes:
    """Serialize with deterministic field ordering, so equal models give equal bytes."""
    return model.SerializeToString(deterministic=True)


def _is_valid(path: Path) -> bool:
    # A file cut at a field boundary can still parse, so also run the (cheap) checker.
    try:
        onnx.checker.check_model(onnx.load(path))
    except Exception:  # any parse/check failure means: regenerate
        return False
    return True


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def builtin_model_path(name: str, cache_dir: Path, seed: int = 0) -> Path:
    """Path of the cached model file, generating (or regenerating a corrupt) file as needed."""
    get_builtin(name)  # fail on an unknown name before touching the disk
    cache_dir = Path(cache_dir)
    path = cache_dir / f"{name}-g{GENERATOR_VERSION}-s{seed}.onnx"
    if path.is_file() and _is_valid(path):
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    _write_atomic(path, model_bytes(build_model(name, seed)))
    return path
