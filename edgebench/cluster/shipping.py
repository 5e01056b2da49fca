"""Files a cell needs, sent to the lab host that measures it by content hash.

The submitting host converts every model once. A cell names its files by host paths (the
model, its companions, the artifact folder, prepared input and calibration sets); the
receiving host keeps them under a mirror of those paths in its own cache, so files that sat
side by side (an ncnn ``.param`` beside its ``.bin``) still do. A file whose bytes the
receiver already holds is never sent again: the sender puts each distinct content in Ray's
object store once, and the receiver fetches only the hashes it lacks.

Nothing here imports Ray: the caller passes the ``put`` and ``get`` functions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from edgebench.converters.artifact_cache import file_sha256

#: (the sender's absolute path, sha256) of one file.
FileEntry = tuple[str, str]


def _fields(value: Any) -> list[str]:
    """The fields of a dataclass, or of an object that pickles from its constructor's arguments
    (``__reduce__`` returning ``(type, args)``, whose args are its fields in order)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [f.name for f in dataclasses.fields(value) if f.init]
    return []


def _rebuilt(value: Any) -> tuple[Callable[..., Any], tuple[Any, ...]] | None:
    """(constructor, arguments) of an object that pickles that way (``InputFiles``)."""
    reduce = type(value).__dict__.get("__reduce__")
    if reduce is None or isinstance(value, Path):
        return None
    made = value.__reduce__()
    return (made[0], tuple(made[1])) if len(made) == 2 else None


def paths_in(value: Any, skip: tuple[type, ...] = ()) -> set[Path]:
    """Every ``Path`` inside ``value``: dataclass fields, lists, tuples, sets and dict values,
    and the constructor arguments of objects that pickle from them."""
    found: set[Path] = set()

    def walk(item: Any) -> None:
        if isinstance(item, Path):
            found.add(item)
        elif skip and isinstance(item, skip):
            return
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            for name in _fields(item):
                walk(getattr(item, name))
        elif (rebuilt := _rebuilt(item)) is not None:
            walk(rebuilt[1])
        elif isinstance(item, list | tuple | set | frozenset):
            for element in item:
                walk(element)
        elif isinstance(item, dict):
            for element in item.values():
                walk(element)

    walk(value)
    return found


def relocate(value: Any, move: Callable[[Path], Path], skip: tuple[type, ...] = ()) -> Any:
    """A copy of ``value`` with every ``Path`` replaced by ``move(path)``."""
    if isinstance(value, Path):
        return move(value)
    if skip and isinstance(value, skip):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for name in _fields(value):
            old = getattr(value, name)
            new = relocate(old, move, skip)
            if new is not old:
                changes[name] = new
        return dataclasses.replace(value, **changes) if changes else value
    if (rebuilt := _rebuilt(value)) is not None:
        make, args = rebuilt
        moved = relocate(args, move, skip)
        return value if moved is args else make(*moved)
    if isinstance(value, list | tuple):
        items = [relocate(v, move, skip) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items) if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        moved = {k: relocate(v, move, skip) for k, v in value.items()}
        return value if all(moved[k] is value[k] for k in value) else moved
    return value


@dataclass
class Outbox:
    """The sender's side: each file hashed once (by path, size and mtime), each content put in
    the object store once."""

    put: Callable[[bytes], Any]
    _hashes: dict[tuple[str, int, int], str] = field(default_factory=dict)
    _refs: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def manifest(self, paths: set[Path]) -> list[FileEntry]:
        """Every file under ``paths`` (a folder counts with its files), with its hash."""
        entries: list[FileEntry] = []
        for path in sorted(paths):
            if path.is_dir():
                files = sorted(p for p in path.rglob("*") if p.is_file())
            elif path.is_file():
                files = [path]
            else:
                continue  # not a host file (a device path, or a file that is not there)
            entries += [(os.path.abspath(f), self._hash(f)) for f in files]
        return entries

    def _hash(self, path: Path) -> str:
        stat = path.stat()
        key = (os.path.abspath(path), stat.st_size, stat.st_mtime_ns)
        with self._lock:
            if key not in self._hashes:
                self._hashes[key] = file_sha256(path)
            return self._hashes[key]

    def refs(self, entries: list[FileEntry]) -> dict[str, Any]:
        """Object-store references of the contents in ``entries``, put the first time."""
        with self._lock:
            for path, digest in entries:
                if digest not in self._refs:
                    self._refs[digest] = self.put(Path(path).read_bytes())
            return {digest: self._refs[digest] for _, digest in entries}


class Inbox:
    """The receiver's side: a content store of blobs by hash, and the mirror of the sender's
    paths, linked to the blobs."""

    def __init__(self, root: Path, sender: str) -> None:
        self.blobs = root / "blobs"
        self.mirror = root / "mirror" / sender
        self._lock = threading.Lock()

    def mirrored(self, path: Path) -> Path:
        """Where the sender's ``path`` is on this host."""
        if not path.is_absolute():
            return path
        return self.mirror.joinpath(*PurePosixPath(path).parts[1:])

    def original(self, text: str) -> str:
        """The sender's path for a mirrored one (records name the sender's files)."""
        prefix = str(self.mirror)
        return "/" + text[len(prefix) :].lstrip("/") if text.startswith(prefix + "/") else text

    def missing(self, entries: list[FileEntry]) -> list[str]:
        return sorted({d for _, d in entries if not (self.blobs / d).is_file()})

    def receive(
        self, entries: list[FileEntry], refs: dict[str, Any], get: Callable[[Any], bytes]
    ) -> int:
        """Make every file of ``entries`` present at its mirrored path; returns the number of
        contents fetched from the sender."""
        with self._lock:
            fetched = 0
            for digest in self.missing(entries):
                data = get(refs[digest])
                if hashlib.sha256(data).hexdigest() != digest:
                    raise OSError(f"shipped file content does not match its hash {digest[:12]}")
                _write_atomic(self.blobs / digest, data)
                fetched += 1
            for path, digest in entries:
                target = self.mirrored(Path(path))
                blob = self.blobs / digest
                if target.is_file() and os.path.samefile(target, blob):
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
                os.link(blob, temporary)
                os.replace(temporary, target)
            return fetched


def _write_atomic(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, target)
