"""``--input``: one real tensor file, prepared once on the host, fed to every framework."""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from edgebench.paths import cache_dir
from edgebench.runners.protocol.input_spec import InputSpec
from edgebench.runners.protocol.tensors import read_input_file


class InputUnavailable(Exception):
    """--input could not be turned into the model's input tensors; the message says why."""


class InputFiles:
    """``--input``: the file is read and preprocessed on the host once per model input list and
    saved as one ``.npz`` in the cache; each device's runner and the reference load that file,
    so every framework and the check see the same tensors, for the timing too."""

    def __init__(self, source: Path, preprocess: str | None = None) -> None:
        self.source = source
        self.preprocess = preprocess
        self._cache: dict[str, Path] = {}
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple:
        # Sent to another host (edgebench run --cluster): the file, not this host's cache.
        return (type(self), (self.source, self.preprocess))

    @property
    def label(self) -> str:
        return f"--input {self.source.name}"

    def prepared(self, inputs: Sequence[dict[str, Any]]) -> Path:
        """The .npz for a model with ``inputs`` ([{name, shape, dtype}]); InputUnavailable."""
        key = repr(list(inputs))
        with self._lock:
            if key not in self._cache:
                self._cache[key] = self._prepare(inputs)
            return self._cache[key]

    def _prepare(self, inputs: Sequence[dict[str, Any]]) -> Path:
        specs = [InputSpec(i["name"], i["shape"], i.get("dtype") or "float32") for i in inputs]
        try:
            arrays = read_input_file(str(self.source), specs, self.preprocess)
        except ValueError as exc:
            raise InputUnavailable(f"--input {self.source}: {exc}") from None
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        data = buffer.getvalue()
        target = cache_dir() / "inputs" / f"input-{hashlib.sha256(data).hexdigest()[:20]}.npz"
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}")
            partial.write_bytes(data)
            partial.replace(target)  # atomic: another run never reads half a file
        return target
