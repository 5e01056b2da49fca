"""One calibration set and one held-out evaluation set per model, shared by every framework.

``--calibration`` names a folder (one sample per image, ``.npy`` or ``.npz`` file, in name
order), a single ``.npz`` or ``.npy`` whose arrays stack several samples on a leading axis, or
one image. Without it the set is synthetic: seeded tensors from the runners' own generator
(``edgebench.ctr/1``), recorded as ``synthetic`` because no real data distribution stands
behind them. The evaluation set is ``--eval`` when given, else the samples of the calibration
set that calibration did not use.

Each set is written once per model input list as an ``.npz`` (one array per input name, samples
on the leading axis) in the cache: converters read the calibration file
(``converters/calibration_data.py``), runners and the ONNX Runtime reference the evaluation file.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgebench.paths import cache_dir
from edgebench.runners.protocol.input_spec import InputSpec
from edgebench.runners.protocol.tensors import (
    IMAGE_SUFFIXES,
    fit_sample,
    load_array_file,
    make_inputs,
    nonfinite_array,
    read_input_file,
)

#: Synthetic sample ``i`` is the seeded input of seed ``SYNTHETIC_SEED + i`` (calibration
#: first, evaluation after), so no evaluation sample was seen by calibration.
SYNTHETIC_SEED = 1_000_003
DEFAULT_CALIBRATION_SAMPLES = 32
DEFAULT_EVAL_SAMPLES = 8
DATA_SUFFIXES = (".npy", ".npz")


class CalibrationUnavailable(Exception):
    """The calibration or evaluation set cannot feed the model; one line says why."""


Sample = dict[str, np.ndarray]


@dataclass(frozen=True)
class CalibrationConfig:
    """What decides the sets: where they come from, how images become tensors, how many."""

    calibration: Path | None = None
    eval: Path | None = None
    preprocess: str | None = None
    calibration_samples: int = DEFAULT_CALIBRATION_SAMPLES
    eval_samples: int = DEFAULT_EVAL_SAMPLES


@dataclass(frozen=True)
class SetInfo:
    """A prepared set: the file, and what a record says about it."""

    path: Path
    n: int
    sha256: str
    synthetic: bool
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "sha256": self.sha256, "synthetic": self.synthetic}


@dataclass(frozen=True)
class PreparedSets:
    calibration: SetInfo
    evaluation: SetInfo


def specs_of(inputs: Sequence[dict[str, Any]]) -> list[InputSpec]:
    return [InputSpec(i["name"], list(i["shape"]), i.get("dtype") or "float32") for i in inputs]


def set_sha256(arrays: dict[str, np.ndarray]) -> str:
    """The digest of a set's tensors (names, dtypes, shapes, bytes): the same data always
    gives the same digest, whatever file it came from."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.asarray(arrays[name], order="C")
        digest.update(f"{name}\0{array.dtype.str}\0{list(array.shape)}\0".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _stacked(samples: Sequence[Sample]) -> dict[str, np.ndarray]:
    return {name: np.stack([s[name] for s in samples]) for name in samples[0]}


def _split_stack(arrays: dict[str, np.ndarray], specs: list[InputSpec]) -> list[Sample] | None:
    """Samples of a file whose arrays stack samples on their first axis, else None (the file
    is one sample). An input of batch 1 takes samples with or without their batch axis:
    ``(N, 1, C, H, W)`` or ``(N, C, H, W)``. ValueError, saying what shape is expected, for an
    array that is neither one sample nor a stack of them."""
    by_name = {s.name: s for s in specs}
    if len(specs) == 1 and len(arrays) == 1:
        arrays = {specs[0].name: next(iter(arrays.values()))}
    if not set(by_name) <= set(arrays):
        return None
    stacks: dict[str, np.ndarray] = {}
    single: list[str] = []
    for name, spec in by_name.items():
        array, shape = arrays[name], list(spec.shape)
        batch_one = bool(shape) and shape[0] == 1
        if array.ndim == len(shape) + 1 and _fits(array.shape[1:], shape):
            stacks[name] = array
        elif array.ndim == len(shape) and _fits(array.shape, shape):
            single.append(name)
        elif array.ndim == len(shape) and batch_one and _fits(array.shape[1:], shape[1:]):
            stacks[name] = array[:, None]  # N samples without their batch axis
        elif array.ndim != len(shape) - 1:  # one sample without its batch axis is fine
            raise ValueError(_expected(name, array, shape))
    if not stacks:
        return None
    for name in single:  # beside stacks, an exact (1, ...) array is a stack of one sample
        if by_name[name].shape[0] != 1:
            raise ValueError(
                f"array {name} holds one sample while {sorted(stacks)} stack several; stack "
                "every input's samples on the first axis"
            )
        stacks[name] = arrays[name][:, None]
    if len(stacks) != len(by_name):
        raise ValueError(
            f"arrays {sorted(stacks)} stack samples, the others do not; stack every input's "
            "samples on the first axis"
        )
    counts = {stacks[n].shape[0] for n in by_name}
    if len(counts) != 1:
        raise ValueError(f"its arrays hold different numbers of samples ({sorted(counts)})")
    return [{n: stacks[n][i] for n in by_name} for i in range(counts.pop())]


def _fits(dims: Sequence[int], shape: Sequence[int]) -> bool:
    """``dims`` are ``shape``'s (a dimension below 1 in ``shape`` takes any size)."""
    if len(dims) != len(shape):
        return False
    return all(w < 1 or w == d for d, w in zip(dims, shape, strict=True))


def _expected(name: str, array: np.ndarray, shape: list[int]) -> str:
    dims = ", ".join(map(str, shape))
    stacked = f"(N, {dims})"
    if shape and shape[0] == 1:
        stacked += f" or (N, {', '.join(map(str, shape[1:]))})"
    return (
        f"array {name} has shape {tuple(array.shape)}; input {name} takes one sample of shape "
        f"{tuple(shape)}, or N samples stacked as {stacked}"
    )


def _finite(samples: list[Sample], names: list[str]) -> list[Sample]:
    """``samples``; ValueError naming the first one (``names``) holding NaN or Inf."""
    for sample, label in zip(samples, names, strict=True):
        bad = nonfinite_array(sample)
        if bad is not None:
            raise ValueError(
                f"{label} (input {bad}) holds NaN or Inf values; calibration and evaluation "
                "need finite numbers"
            )
    return samples


def read_samples(path: Path, specs: list[InputSpec], preprocess: str | None) -> list[Sample]:
    """Every sample ``path`` holds, checked against ``specs``; ValueError says what is wrong
    (which file, which sample)."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        unknown = [p.name for p in files if p.suffix.lower() not in IMAGE_SUFFIXES + DATA_SUFFIXES]
        if unknown:
            raise ValueError(
                f"{unknown[0]!r} is not an image ({', '.join(IMAGE_SUFFIXES)}), .npy or .npz"
            )
        return _finite([_read_one(p, specs, preprocess) for p in files], [p.name for p in files])
    if not path.is_file():
        raise ValueError("no such file or folder")
    if path.suffix.lower() not in DATA_SUFFIXES:
        return _finite([_read_one(path, specs, preprocess)], ["its sample"])
    arrays = load_array_file(str(path))  # ValueError: not a numpy array file
    stacked = _split_stack(arrays, specs)
    if stacked is None:
        return _finite([fit_sample(arrays, specs, path.name)], ["its sample"])
    samples = [fit_sample(s, specs, f"sample {i}") for i, s in enumerate(stacked)]
    return _finite(samples, [f"sample {i}" for i in range(len(samples))])


def _read_one(path: Path, specs: list[InputSpec], preprocess: str | None) -> Sample:
    image = path.suffix.lower() in IMAGE_SUFFIXES
    try:
        if image:
            return read_input_file(str(path), specs, preprocess)
        return fit_sample(load_array_file(str(path)), specs, path.name)
    except ValueError as exc:
        raise ValueError(f"{path.name}: {exc}") from None


def synthetic_samples(specs: list[InputSpec], start: int, count: int) -> list[Sample]:
    return [make_inputs(specs, SYNTHETIC_SEED + start + i) for i in range(count)]


class CalibrationSets:
    """The prepared sets per model input list, computed once and shared by every cell."""

    def __init__(self, config: CalibrationConfig) -> None:
        self.config = config
        self._cache: dict[str, PreparedSets] = {}
        self._lock = threading.Lock()

    def prepared(self, inputs: Sequence[dict[str, Any]]) -> PreparedSets:
        """The sets for a model with ``inputs`` ([{name, shape, dtype}]); CalibrationUnavailable."""
        key = repr(list(inputs))
        with self._lock:
            if key not in self._cache:
                self._cache[key] = self._prepare(specs_of(inputs))
            return self._cache[key]

    def _load(self, option: str, path: Path, specs: list[InputSpec]) -> list[Sample]:
        try:
            samples = read_samples(path, specs, self.config.preprocess)
        except ValueError as exc:
            raise CalibrationUnavailable(f"{option} {path}: {exc}") from None
        if not samples:
            raise CalibrationUnavailable(
                f"{option} {path}: holds no samples; give a folder of images, .npy or .npz "
                "files, or an .npz whose arrays stack samples on their first axis"
            )
        return samples

    def _prepare(self, specs: list[InputSpec]) -> PreparedSets:
        config = self.config
        if any(d < 1 for s in specs for d in s.shape):
            raise CalibrationUnavailable(
                "int8 needs fixed input shapes for calibration; give --shape NAME=DIMS"
            )
        if config.calibration is None:
            calibration = synthetic_samples(specs, 0, config.calibration_samples)
            evaluation = (
                self._load("--eval", config.eval, specs)[: config.eval_samples]
                if config.eval is not None
                else synthetic_samples(specs, config.calibration_samples, config.eval_samples)
            )
            source = "synthetic (seeded, edgebench.ctr/1)"
            return PreparedSets(
                _write("calibration", calibration, True, source),
                _write("evaluation", evaluation, config.eval is None, str(config.eval or source)),
            )
        samples = self._load("--calibration", config.calibration, specs)
        if config.eval is not None:
            evaluation = self._load("--eval", config.eval, specs)[: config.eval_samples]
            calibration = samples[: config.calibration_samples]
            eval_source = str(config.eval)
        else:
            if len(samples) < 2:
                raise CalibrationUnavailable(
                    f"--calibration {config.calibration}: 1 sample leaves none to evaluate "
                    "on; give more samples or a separate --eval set"
                )
            held_out = min(config.eval_samples, max(1, len(samples) // 4))
            calibration = samples[: min(config.calibration_samples, len(samples) - held_out)]
            evaluation = samples[len(samples) - held_out :]
            eval_source = f"{config.calibration} (the {held_out} samples calibration left out)"
        return PreparedSets(
            _write("calibration", calibration, False, str(config.calibration)),
            _write("evaluation", evaluation, False, eval_source),
        )


def _write(kind: str, samples: list[Sample], synthetic: bool, source: str) -> SetInfo:
    """The samples stacked into one ``.npz`` in the cache, named by their digest."""
    arrays = _stacked(samples)
    digest = set_sha256(arrays)
    target = cache_dir() / "calibration" / f"{kind}-{digest[:20]}.npz"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}")
        np.savez(partial, **arrays)  # type: ignore[arg-type]  # stub: keywords as options
        # np.savez appends .npz to a name without it.
        written = partial if partial.is_file() else partial.with_name(partial.name + ".npz")
        written.replace(target)  # atomic: another run never reads half a file
    return SetInfo(target, len(samples), digest, synthetic, source)
