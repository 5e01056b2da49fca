"""Checks of a run's inputs that need more than one setting, or that each setting's own check
leaves to the cells: made before any device is connected, so a typo costs one line, not a
device probe and a failed cell per framework.

- ``--cores``: the cpu-list syntax of every selection (a cluster name waits for the device's
  profile, which alone knows its clusters);
- ``--calibration`` and ``--eval``: every array file of the set is a numpy array file;
- ``--preprocess``: it applies to images, so it needs an image to apply to.
"""

from __future__ import annotations

from pathlib import Path

from edgebench.errors import UserError
from edgebench.planning.config import RunConfig
from edgebench.runners.protocol import parse_cpu_list
from edgebench.runners.protocol.tensors import IMAGE_SUFFIXES, load_array_file

ARRAY_SUFFIXES = (".npy", ".npz")


def check_run_inputs(config: RunConfig) -> None:
    """UserError naming the option and the fix for the first input that cannot work."""
    for selection in config.sweep.cores:
        check_cpu_syntax(selection)
    sets = {"--calibration": config.quantization.calibration, "--eval": config.quantization.eval}
    for option, source in sets.items():
        if source is not None:
            check_sample_set(option, source)
    given = [s for s in (config.checks.input, *sets.values()) if s is not None]
    # With no file at all, --preprocess only has no effect: warn_unused says so.
    if config.checks.preprocess is not None and given and not any(map(has_images, given)):
        raise UserError(
            f"--preprocess applies to images, and {', '.join(map(str, given))} holds none: "
            ".npy and .npz arrays are fed as they are; drop --preprocess"
        )


def check_cpu_syntax(selection: str) -> None:
    """A selection that is a cpu list must parse; ``all`` and names pass (clusters are the
    device's)."""
    text = selection.strip().lower()
    if text in ("", "all") or text[0].isalpha():
        return
    try:
        parse_cpu_list(text)
    except ValueError as exc:
        raise UserError(f"--cores {selection}: {exc}; use e.g. 0, 0-3, 0,2 or all") from None


def check_sample_set(option: str, source: Path) -> None:
    """Every .npy/.npz file of a calibration or evaluation set (one file, or a folder's) is a
    numpy array file. Images are read by Pillow when the set is used."""
    files = [source] if source.is_file() else sorted(source.iterdir())
    for path in files:
        if path.suffix.lower() not in ARRAY_SUFFIXES or not path.is_file():
            continue
        try:
            load_array_file(str(path))
        except ValueError as exc:
            where = source if path == source else f"{source}: {path.name}"
            raise UserError(f"{option} {where}: {exc}") from None


def has_images(source: Path) -> bool:
    if source.is_file():
        return source.suffix.lower() in IMAGE_SUFFIXES
    return source.is_dir() and any(p.suffix.lower() in IMAGE_SUFFIXES for p in source.iterdir())
