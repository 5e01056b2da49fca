"""The evaluation pass of a quantized cell: every sample of the evaluation set run once after
the timed window, the outputs saved stacked for the host to compare with fp32 ONNX Runtime.

Runs on the device: Python 3.8+, numpy and the backends; imports nothing from the host package.
"""

from __future__ import annotations

from typing import Any, List

from .backends import Backend
from .protocol.errors import BackendError
from .protocol.input_spec import InputSpec
from .protocol.tensors import fit_sample, save_outputs


def evaluate(backend: Backend, inputs: List[InputSpec], eval_file: str, target: str) -> int:
    """Run every sample of ``eval_file`` once and save the outputs stacked the same way;
    returns how many samples ran."""
    import numpy as np

    try:
        with np.load(eval_file, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError) as exc:
        raise BackendError("bad_spec", "evaluation set %s: %s" % (eval_file, exc)) from None
    count = min(a.shape[0] for a in arrays.values()) if arrays else 0
    names = backend.output_names()
    collected: List[List[Any]] = [[] for _ in names]
    for index in range(count):
        sample = {name: a[index] for name, a in arrays.items()}
        try:
            feeds = fit_sample(sample, inputs, "evaluation sample %d" % index)
        except ValueError as exc:
            raise BackendError("bad_spec", "evaluation set: %s" % exc) from None
        try:
            outputs = backend.make_stream(feeds)()
        except (BackendError, MemoryError):
            raise
        except Exception as exc:
            raise BackendError(
                "inference", "evaluation sample %d failed: %s" % (index, exc)
            ) from exc
        for slot, output in zip(collected, outputs):
            slot.append(np.array(output, copy=True))
    save_outputs(target, names, [np.stack(slot) for slot in collected])
    return count
