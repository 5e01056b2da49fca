"""The real qwen2 vocabulary of the built-in generative models: ``ggml-vocab-qwen2.gguf`` (a
tokenizer without weights), taken from llama-cpp-python's pinned sdist, which vendors llama.cpp.

The sdist is a source archive like the native runner's: ``edgebench runners fetch-sources`` has
pip put it in the sources folder (``edgebench/builds/sources.py``), checked by its sha256. The one
file needed is copied out of it once, beside the extracted archives, and checked by its own.
"""

from __future__ import annotations

import logging
import os
import shutil
import tarfile
import zlib
from pathlib import Path

from edgebench.builds import native_root
from edgebench.builds.sources import LLAMA_CPP_SDIST, archive_stem, sources_dir
from edgebench.converters.artifact_cache import file_sha256
from edgebench.errors import UserError
from edgebench.paths import exclusive_lock

log = logging.getLogger(__name__)

VOCAB_MEMBER = "vendor/llama.cpp/models/ggml-vocab-qwen2.gguf"
VOCAB_NAME = "ggml-vocab-qwen2.gguf"
VOCAB_SHA256 = "44c2f46b715f585c6ab513970e8a006bfa5badd6108560054921cf598d154d8c"
FETCH_COMMAND = "edgebench runners fetch-sources"


def _stem() -> str:
    return f"{archive_stem(Path(LLAMA_CPP_SDIST.file_name))}-{LLAMA_CPP_SDIST.sha256[:12]}"


def _candidates() -> list[Path]:
    """Where the vocabulary may be already: the whole sdist extracted (a llama.cpp build's), or
    the one file copied out of it by :func:`qwen2_vocab_path`."""
    extracted = native_root() / "extracted"
    return [extracted / _stem() / VOCAB_MEMBER, extracted / f"{_stem()}-vocab" / VOCAB_NAME]


def missing_vocab_message() -> str:
    return (
        f"no qwen2 vocabulary for the built-in generative models: `{FETCH_COMMAND}` has pip "
        f"download {LLAMA_CPP_SDIST.file_name} (the source of {LLAMA_CPP_SDIST.requirement}) "
        f"into {sources_dir()}/, or put it there yourself"
    )


def qwen2_vocab_path(sdist: Path | None = None) -> Path:
    """The checked ``ggml-vocab-qwen2.gguf``: from the cache, else copied out of ``sdist`` (by
    default the pinned archive in the sources folder). UserError in one line when the archive
    is missing or is not the pinned one."""
    for path in _candidates():
        if path.is_file() and file_sha256(path) == VOCAB_SHA256:
            return path
    archive = sdist or sources_dir() / LLAMA_CPP_SDIST.file_name
    if not archive.is_file():
        raise UserError(missing_vocab_message())
    digest = file_sha256(archive)
    if digest != LLAMA_CPP_SDIST.sha256:
        raise UserError(
            f"{archive} has sha256 {digest}, not the pinned {LLAMA_CPP_SDIST.sha256}: remove it "
            f"and run `{FETCH_COMMAND}`"
        )
    target = _candidates()[1]
    with exclusive_lock(target.parent.with_name(f".{target.parent.name}.lock")):
        if target.is_file() and file_sha256(target) == VOCAB_SHA256:
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            _copy_member(archive, f"{archive_stem(archive)}/{VOCAB_MEMBER}", tmp)
            got = file_sha256(tmp)
            if got != VOCAB_SHA256:
                raise UserError(
                    f"{VOCAB_MEMBER} in {archive} has sha256 {got}, not the pinned "
                    f"{VOCAB_SHA256}: remove the archive and run `{FETCH_COMMAND}`"
                )
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    log.info("copied the qwen2 vocabulary out of %s into %s", archive, target)
    return target


def _copy_member(archive: Path, member: str, dest: Path) -> None:
    """Stream one member out of a .tar.gz, stopping at it (the archive is 77 MB)."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for info in tar:
                if info.name == member and info.isfile():
                    source = tar.extractfile(info)
                    if source is None:
                        break
                    with source, open(dest, "wb") as out:
                        shutil.copyfileobj(source, out)
                    return
    except (tarfile.TarError, zlib.error, OSError, EOFError) as exc:
        raise UserError(
            f"cannot read {archive} ({' '.join(str(exc).split())[:200] or 'truncated'}): remove "
            f"it and run `{FETCH_COMMAND}`"
        ) from None
    raise UserError(f"{archive} holds no {member}: is it {LLAMA_CPP_SDIST.file_name}?")
