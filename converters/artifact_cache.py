"""Content-addressed store of converted artifacts.

Key: source model sha256 + target format + converter version + options. An entry is a folder
with the artifact files and a ``manifest.json`` written last; an entry whose manifest is missing
or whose files do not match their recorded sha256 is rebuilt. A conversion writes into
``.<key>.<pid>.<random>/`` beside the entry and renames it into place when complete; an
interrupted one removes that folder, and one a killed process left is removed by the next
conversion of the same key.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .base import ConversionError, ConversionOptions, Converter

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
MANIFEST_SCHEMA = "edgebench.artifact/1"


@dataclass(frozen=True)
class Artifact:
    format: str
    framework: str | None
    path: Path  # the entry folder
    files: tuple[str, ...]  # primary first
    manifest: dict[str, Any]
    cached: bool  # True when nothing was converted this time

    @property
    def primary(self) -> Path:
        return self.path / self.files[0]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cache_key(source_sha256: str, converter: Converter, options: ConversionOptions) -> str:
    material = json.dumps(
        {
            "source": source_sha256,
            "format": converter.format,
            "converter": converter.cache_version(options),
            "options": options.key_fields(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(material.encode()).hexdigest()[:24]


def _load_valid(entry: Path) -> dict[str, Any] | None:
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
        files = manifest["files"]
        for item in files:
            path = entry / item["name"]
            if path.stat().st_size != item["size"] or file_sha256(path) != item["sha256"]:
                return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return manifest if files else None


class ArtifactCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def entry_path(
        self, converter: Converter, source_sha256: str, options: ConversionOptions
    ) -> Path:
        return self.root / converter.format / cache_key(source_sha256, converter, options)

    def lookup(
        self, converter: Converter, source_sha256: str, options: ConversionOptions
    ) -> Artifact | None:
        entry = self.entry_path(converter, source_sha256, options)
        manifest = _load_valid(entry) if entry.is_dir() else None
        if manifest is None:
            return None
        names = tuple(item["name"] for item in manifest["files"])
        return Artifact(converter.format, converter.framework, entry, names, manifest, True)

    def convert(
        self,
        converter: Converter,
        onnx_path: Path,
        source_sha256: str,
        options: ConversionOptions,
        *,
        force: bool = False,
    ) -> Artifact:
        """The cached artifact, or a fresh conversion stored atomically."""
        if not force:
            hit = self.lookup(converter, source_sha256, options)
            if hit is not None:
                return hit
        reason = converter.unavailable_reason()
        if reason:
            raise ConversionError("toolchain_missing", reason)
        if options.precision not in converter.precisions:
            note = converter.precision_notes.get(options.precision)
            raise ConversionError(
                "unsupported_precision",
                f"{converter.format} cannot be produced in {options.precision} "
                f"(supported: {', '.join(converter.precisions)})" + (f": {note}" if note else ""),
            )
        entry = self.entry_path(converter, source_sha256, options)
        entry.parent.mkdir(parents=True, exist_ok=True)
        _remove_abandoned(entry)
        scratch = Path(tempfile.mkdtemp(prefix=f".{entry.name}.{os.getpid()}.", dir=entry.parent))
        try:
            started = time.monotonic()
            names = converter.convert(onnx_path, scratch, options)
            elapsed = time.monotonic() - started
            missing = [n for n in names if not (scratch / n).is_file()]
            if not names or missing:
                raise ConversionError(
                    "failed", f"{converter.format} converter did not write {missing or 'files'}"
                )
            # Keep only what the converter declared; tools leave scratch files behind.
            for leftover in scratch.iterdir():
                if leftover.name not in names:
                    _remove(leftover)
            manifest = {
                "schema": MANIFEST_SCHEMA,
                "format": converter.format,
                "framework": converter.framework,
                "converter": type(converter).__name__,
                "converter_version": converter.cache_version(options),
                "options": options.key_fields(),
                "source_sha256": source_sha256,
                "source_path": str(onnx_path),
                "files": [
                    {
                        "name": n,
                        "sha256": file_sha256(scratch / n),
                        "size": (scratch / n).stat().st_size,
                    }
                    for n in names
                ],
                "time_s": round(elapsed, 3),
                "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "log": getattr(converter, "last_log", "")[-20_000:],
            }
            if getattr(converter, "last_quant", None) is not None:
                manifest["quant"] = converter.last_quant
            tmp_manifest = scratch / (MANIFEST + ".tmp")
            tmp_manifest.write_text(json.dumps(manifest, indent=2))
            os.replace(tmp_manifest, scratch / MANIFEST)
            if entry.exists():
                shutil.rmtree(entry)
            os.replace(scratch, entry)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        return Artifact(converter.format, converter.framework, entry, tuple(names), manifest, False)


def _remove_abandoned(entry: Path) -> None:
    """Remove the scratch folders of conversions into ``entry`` whose process is gone (killed
    before it could clean up); those of a live process may still be converting."""
    for scratch in entry.parent.glob(f".{entry.name}.*"):
        pid = scratch.name.split(".")[2]
        if not pid.isdigit() or not scratch.is_dir() or _alive(int(pid)):
            continue
        log.warning("removing %s, left half-built by an interrupted conversion", scratch)
        shutil.rmtree(scratch, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
