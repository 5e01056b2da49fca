"""Seeded inputs and output summaries: identical on every device and on the host.

The host imports this module (as ``edgebench.runners.backends.tensors``) to build the very same
input tensors for its ONNX Runtime reference, so the output check compares like with like.
"""

from __future__ import annotations

from typing import Any, Dict, List

from .base import BackendError, InputSpec

# --- inputs and outputs ----------------------------------------------------------------------


def make_inputs(specs: List[InputSpec], seed: int) -> Dict[str, Any]:
    """Seeded inputs; every framework on every device gets bit-identical tensors."""
    import numpy as np

    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in specs:
        if any(d < 0 for d in spec.shape):
            raise BackendError(
                "bad_spec",
                "input %r has dynamic dimensions %s; give a concrete shape"
                % (spec.name, spec.shape),
            )
        dtype = np.dtype(spec.dtype)
        if dtype.kind == "f":
            value = rng.standard_normal(spec.shape, dtype=np.float32).astype(dtype)
        elif dtype.kind == "b":
            value = rng.integers(0, 2, spec.shape).astype(bool)
        else:
            value = rng.integers(0, 100, spec.shape).astype(dtype)
        feeds[spec.name] = np.ascontiguousarray(value)
    return feeds


def summarize_outputs(names: List[str], outputs: List[Any], sample_size: int = 64) -> List[Dict]:
    """Enough of each output to compare runs and frameworks without shipping whole tensors."""
    import numpy as np

    summary = []
    for name, value in zip(names, outputs):
        arr = np.asarray(value)
        flat = arr.reshape(-1)
        entry: Dict[str, Any] = {"name": name, "shape": list(arr.shape), "dtype": str(arr.dtype)}
        if flat.size and arr.dtype.kind in "fiub":
            as_float = flat.astype(np.float64)
            finite = np.isfinite(as_float)
            entry["nonfinite"] = int(flat.size - int(finite.sum()))
            vals = as_float[finite] if entry["nonfinite"] else as_float
            if vals.size:
                entry.update(
                    mean=float(vals.mean()),
                    std=float(vals.std()),
                    min=float(vals.min()),
                    max=float(vals.max()),
                    l2=float(np.sqrt(np.square(vals).sum())),
                )
            entry["argmax"] = int(np.argmax(np.where(finite, as_float, -np.inf)))
            entry["top5"] = [int(i) for i in np.argsort(-as_float, kind="stable")[:5]]
            step = max(1, flat.size // sample_size)
            entry["sample_stride"] = step
            entry["sample"] = [float(v) for v in as_float[::step][:sample_size]]
        summary.append(entry)
    return summary


def save_outputs(path: str, names: List[str], outputs: List[Any]) -> None:
    """Full outputs as an .npz (keys are output names) for the host's output check."""
    import os

    import numpy as np

    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    arrays = {"output_%d" % i: np.asarray(v) for i, v in enumerate(outputs)}
    np.savez(path, __names__=np.array(names), **arrays)
