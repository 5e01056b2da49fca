"""The device's TensorRT engine cache: serialized engines keyed by everything that changes them,
each with a JSON sidecar, and one timing cache per TensorRT version and GPU.

An engine is ``<key>.engine`` beside ``<key>.json`` (what the key was made of, the engine's
size and sha256, the build time, when it was built); both are written to a temporary file and
renamed, so a reader never sees half an entry. An entry that does not read back whole is
removed with a line on stderr and the engine rebuilt. The newest ``KEEP`` engines are kept
(a hit counts as new). Nothing here needs TensorRT.

Runs on the device: Python 3.8+, standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..protocol.backend_options import NvidiaOptions, TensorRTOptions

ENV_FOLDER = "EDGEBENCH_TRT_CACHE"
DEFAULT_FOLDER = Path("~/.cache/edgebench/tensorrt")
KEEP = 20
#: Bumped when what an entry holds or how its key is made changes.
FORMAT = 1
HIT, MISS, OFF = "hit", "miss", "off"


@dataclass
class EngineKey:
    """What makes one engine: the same ingredients give the same engine file name."""

    model_sha256: str
    #: {input: {"min": [...], "opt": [...], "max": [...]}}
    profile: Dict[str, Dict[str, List[int]]]
    precision: str
    tensorrt_version: str
    gpu_name: str
    compute_capability: str
    #: The builder settings that change the engine (strongly typed, TF32, profile count, ...).
    settings: Dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> Dict[str, Any]:
        return {"format": FORMAT, **asdict(self)}

    def digest(self) -> str:
        text = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass
class CachedEngine:
    data: bytes
    #: The build time stored with it (ms), so a hit still shows what the engine cost.
    build_ms: Optional[float]


def cache_root(options: NvidiaOptions) -> Path:
    """Where the device keeps TensorRT engines (this backend's and ONNX Runtime's TensorRT
    provider's): the options' ``engine_cache_dir``, else $EDGEBENCH_TRT_CACHE, else
    ~/.cache/edgebench/tensorrt."""
    chosen = options.engine_cache_dir or os.environ.get(ENV_FOLDER) or DEFAULT_FOLDER
    return Path(str(chosen)).expanduser()


def cache_folder(options: TensorRTOptions) -> Optional[Path]:
    """The cache folder (``cache_root``); None when the options' ``engine_cache`` is off."""
    if not options.engine_cache:
        return None
    return cache_root(options)


def model_cache_folder(root: str, model_path: str) -> str:
    """The sub-folder of ``root`` for one model's engines, named by the file's content.

    ONNX Runtime's TensorRT provider names its engines by the graph and the model file's
    name, not its weights, and every fp16 artifact is ``model.fp16.onnx``: in one shared
    folder a re-quantized model would load the engine of the one before it (and report a
    hit). One folder per content keeps each model's engines apart."""
    return os.path.join(str(root), "model-%s" % file_sha256(model_path)[:16])


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    descriptor, temporary = tempfile.mkstemp(prefix=path.name + ".", dir=str(path.parent))
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.replace(temporary, str(path))
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def warn(message: str) -> None:
    sys.stderr.write("edgebench tensorrt cache: %s\n" % message)
    sys.stderr.flush()


class EngineCache:
    """One cache folder (made on first use)."""

    def __init__(self, folder: Path, keep: int = KEEP) -> None:
        self.folder = folder
        self.keep = keep

    def _paths(self, key: EngineKey) -> "tuple[Path, Path]":
        name = key.digest()
        return self.folder / (name + ".engine"), self.folder / (name + ".json")

    def lookup(self, key: EngineKey) -> Optional[CachedEngine]:
        """The stored engine for ``key``; None when there is none or it is damaged (then it is
        removed, saying so on stderr)."""
        engine_path, sidecar_path = self._paths(key)
        if not engine_path.exists() and not sidecar_path.exists():
            return None
        try:
            sidecar = json.loads(sidecar_path.read_text())
            data = engine_path.read_bytes()
        except (OSError, ValueError) as exc:
            self._discard(key, "unreadable entry (%s)" % exc)
            return None
        if not isinstance(sidecar, dict) or sidecar.get("key") != key.as_dict():
            self._discard(key, "its sidecar does not hold this key")
            return None
        if sidecar.get("size") != len(data) or sidecar.get("sha256") != _sha(data):
            self._discard(key, "the engine file does not match its sidecar")
            return None
        now = time.time()
        for path in (engine_path, sidecar_path):  # a hit is new for the eviction order
            os.utime(str(path), (now, now))
        build_ms = sidecar.get("build_ms")
        return CachedEngine(data, float(build_ms) if build_ms is not None else None)

    def discard(self, key: EngineKey, why: str) -> None:
        """Remove the entry of ``key`` (it would not deserialize, ...), saying why."""
        self._discard(key, why)

    def _discard(self, key: EngineKey, why: str) -> None:
        warn("engine %s removed, rebuilding: %s" % (key.digest(), why))
        for path in self._paths(key):
            if path.exists():
                path.unlink()
        return None

    def store(self, key: EngineKey, data: bytes, build_ms: float) -> None:
        """Store an engine and its sidecar, then drop the oldest beyond ``keep``."""
        self.folder.mkdir(parents=True, exist_ok=True)
        engine_path, sidecar_path = self._paths(key)
        sidecar = {
            "key": key.as_dict(),
            "size": len(data),
            "sha256": _sha(data),
            "build_ms": round(build_ms, 3),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        write_atomically(engine_path, data)
        write_atomically(sidecar_path, json.dumps(sidecar, indent=1).encode())
        self.evict()

    def engines(self) -> List[Path]:
        """The stored engines, newest first."""
        if not self.folder.is_dir():
            return []
        found = [p for p in self.folder.glob("*.engine") if p.is_file()]
        return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)

    def evict(self) -> None:
        for engine_path in self.engines()[self.keep :]:
            for path in (engine_path, engine_path.with_suffix(".json")):
                if path.exists():
                    path.unlink()

    def timing_cache_path(self, tensorrt_version: str, gpu_name: str, capability: str) -> Path:
        """One timing cache per (TensorRT version, GPU, compute capability)."""
        text = "\0".join((tensorrt_version, gpu_name, capability))
        return self.folder / ("timing-%s.cache" % hashlib.sha256(text.encode()).hexdigest()[:16])

    def load_timing_cache(self, path: Path) -> bytes:
        try:
            return path.read_bytes()
        except OSError:
            return b""

    def save_timing_cache(self, path: Path, data: bytes) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        write_atomically(path, data)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
