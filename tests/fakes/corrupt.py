"""A model with one layer's weights perturbed: what a converter that mangles one layer would
produce. The output check must call it a mismatch, at fp32 and at fp16."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper


def perturb_largest_weight(src: Path, dst: Path, scale: float, seed: int = 0) -> str:
    """Write ``src`` to ``dst`` with Gaussian noise of ``scale`` x the weight's standard
    deviation added to its largest 4-d (convolution) weight, else its largest 2-d one; returns
    the initializer's name."""
    model = onnx.load(str(src))
    candidates = [t for t in model.graph.initializer if len(t.dims) == 4] or [
        t for t in model.graph.initializer if len(t.dims) == 2
    ]
    if not candidates:
        raise ValueError(f"{src} has no 4-d or 2-d weight to perturb")
    target = max(candidates, key=lambda t: int(np.prod(t.dims)))
    weights = numpy_helper.to_array(target).astype(np.float32)
    noise = np.random.default_rng(seed).standard_normal(weights.shape).astype(np.float32)
    perturbed = weights + noise * np.float32(scale * float(weights.std()))
    target.CopyFrom(numpy_helper.from_array(perturbed, target.name))
    dst.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(dst))
    return target.name
