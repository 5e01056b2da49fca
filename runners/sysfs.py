"""Cheap reads of sysfs attributes, every path under a ``root`` prefix (default ``/``), so the
same code reads a real device or a synthetic tree laid out like one.

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import glob
import os
import re
from typing import Any, List, Optional


def sysfs_path(root: str, path: str) -> str:
    """``path`` (absolute, as on the device) under the ``root`` prefix."""
    return os.path.join(root, path.lstrip("/"))


def sysfs_glob(root: str, pattern: str) -> List[str]:
    """Paths matching ``pattern`` under ``root``, numeric parts sorted as numbers."""
    found = glob.glob(os.path.join(glob.escape(root), pattern.lstrip("/")))
    return sorted(found, key=_natural_key)


def _natural_key(text: str) -> List[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def read_bytes(path: str) -> bytes:
    """One read(2) of a sysfs attribute (a sysfs show() returns at most a page)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 8192)
    finally:
        os.close(fd)


def read_int(path: str) -> int:
    return int(read_bytes(path))  # int() accepts bytes and ignores the trailing newline


def read_text(path: str) -> str:
    return read_bytes(path).decode("utf-8", "replace").strip()


def try_text(path: str) -> Optional[str]:
    try:
        return read_text(path)
    except (OSError, ValueError):
        return None


def try_int(path: str) -> Optional[int]:
    try:
        return read_int(path)
    except (OSError, ValueError):
        return None


def one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())
