"""Where edgebench keeps its files (XDG base directories, overridable by environment)."""

from __future__ import annotations

import os
from pathlib import Path


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / fallback


def cache_dir() -> Path:
    """Generated models, converted artifacts, the runner's private HOME."""
    override = os.environ.get("EDGEBENCH_CACHE")
    return Path(override) if override else _xdg("XDG_CACHE_HOME", ".cache") / "edgebench"


def default_results_dir() -> Path:
    """Stored runs, one folder per run."""
    override = os.environ.get("EDGEBENCH_RESULTS")
    if override:
        return Path(override)
    return _xdg("XDG_DATA_HOME", ".local/share") / "edgebench" / "runs"
