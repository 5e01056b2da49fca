"""The calibration set as a quantizing converter sees it.

The host prepares one ``.npz`` per model (edgebench/quantization/calibration.py): one array per
ONNX input name, the samples stacked on a new leading axis, so sample ``i`` of input ``x`` is
``arrays["x"][i]`` with the model input's full shape (batch axis included). Every converter
reads the same file, so every framework is calibrated on the same tensors.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from .base import ConversionError, ConversionOptions


def load_calibration(options: ConversionOptions) -> dict[str, np.ndarray]:
    """The calibration arrays of ``options``; a ConversionError ("failed") names what is wrong."""
    path = options.calibration
    if path is None:
        raise ConversionError(
            "failed", f"{options.precision} conversion needs a calibration set (--calibration)"
        )
    try:
        with np.load(Path(path), allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError) as exc:
        raise ConversionError("failed", f"cannot read calibration set {path}: {exc}") from None
    counts = {name: a.shape[0] if a.ndim else 0 for name, a in arrays.items()}
    if not arrays or min(counts.values()) == 0:
        raise ConversionError("failed", f"calibration set {path} holds no samples")
    if len(set(counts.values())) != 1:
        raise ConversionError(
            "failed", f"calibration set {path}: inputs have different sample counts {counts}"
        )
    check_inputs(arrays, options.input_shapes, path)
    return arrays


def check_inputs(
    arrays: dict[str, np.ndarray], wanted: Mapping[str, Sequence[int] | None], source: object
) -> None:
    """A ConversionError ("failed") unless every wanted input has samples of its shape (a
    dimension <= 0 or a shape of None accepts any), and every sample is finite."""
    for name, shape in wanted.items():
        if name not in arrays:
            raise ConversionError(
                "failed",
                f"calibration set {source} has no array for input {name!r} (it has "
                f"{', '.join(sorted(arrays))}); save one array per input name, samples "
                "stacked on the first axis",
            )
        got = list(arrays[name].shape[1:])
        if shape is not None and (
            len(got) != len(shape) or any(w > 0 and w != g for w, g in zip(shape, got, strict=True))
        ):
            raise ConversionError(
                "failed",
                f"calibration set {source}: input {name!r} samples have shape {got}, the model "
                f"wants {list(shape)}; stack samples of that shape on a new leading axis",
            )
        if arrays[name].dtype.kind in "fc" and not np.isfinite(arrays[name]).all():
            raise ConversionError(
                "failed", f"calibration set {source}: input {name!r} holds NaN or inf"
            )


def sample_count(arrays: dict[str, np.ndarray]) -> int:
    return next(iter(arrays.values())).shape[0]


def iter_samples(arrays: dict[str, np.ndarray]) -> Iterator[dict[str, np.ndarray]]:
    """One feed dict per sample, each array with the model input's shape."""
    for i in range(sample_count(arrays)):
        yield {name: np.asarray(a[i], order="C") for name, a in arrays.items()}
