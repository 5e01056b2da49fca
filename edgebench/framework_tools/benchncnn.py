"""ncnn ``benchncnn``.

Command (positional arguments, then ``key=value`` pairs; current builds)::

    benchncnn LOOPS THREADS 0 -1 0 param=model.param shape=[W,H,C][,[W,H,C]...]

``powersave`` 0 (all cores: affinity comes from taskset instead), ``gpu_device`` -1 (CPU only)
and ``cooling_down`` 0 (the default 1 sleeps 10 s before each model). Only the ``.param`` is
read; weights are zero-filled by the tool. Shapes are ncnn's W,H[,D],C order: the ONNX shape
without its batch dim (which must be 1), reversed ([1,3,224,224] -> [224,224,3],
[1,16,64] -> [64,16]); one ``[...]`` per input, in the model's input order.

Warm-up is internal and fixed: benchncnn runs 8 untimed inferences before the timed loop (10
on GPU) and has no option for it, so ``cell.warmup`` is not used. Precision is not selectable
either: benchncnn always enables fp16 packed storage and arithmetic, which ncnn uses wherever
the CPU supports it (ARMv8.2+), so an "fp32" cell is not guaranteed to run in fp32
(``controls_precision`` is False).

Output (to stderr)::

    loop_count = 4
    num_threads = 1
    powersave = 0
    gpu_device = -1
    cooling_down = 0
              mobilenet_v2  min =   15.13  max =   15.79  avg =   15.49

Times are milliseconds; only min, max and avg are printed. With a ``param=`` model the label is
the param path as given; without one the tool runs its built-in model list, one line each.
GPU device lines (``[0 Adreno (TM) 640]  queueC=...``) are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .base import NUMBER, NativeCell, SummaryLineAdapter, shape_arg

# A GPU device line (`[0 Adreno (TM) 640]  queueC=...`) is never a result.
_RESULT_RE = re.compile(
    r"^(?!\[\d+ )"
    rf"(?P<label>.*?)\s*\bmin\s*=\s*(?P<min>{NUMBER})\s*(?:ms)?\s+max\s*=\s*(?P<max>{NUMBER})"
    rf"\s*(?:ms)?\s+avg\s*=\s*(?P<avg>{NUMBER})\s*(?:ms)?\s*$",
    re.ASCII,
)
_LOOP_RE = re.compile(r"^loop_count\s*=\s*(\d+)\s*$", re.ASCII)


def ncnn_shape(dims: list[int], *, name: str = "input") -> list[int]:
    """ONNX (NCHW-style) shape -> benchncnn's W,H[,D],C shape."""
    dims = shape_arg(dims, what=f"ncnn input {name!r}")
    if len(dims) >= 2:
        if dims[0] != 1:
            raise ValueError(f"ncnn input {name!r}: batch must be 1 (ncnn has none), got {dims}")
        dims = dims[1:]
    if not 1 <= len(dims) <= 4:
        raise ValueError(f"ncnn input {name!r}: {len(dims)} dims after the batch; ncnn takes 1-4")
    return list(reversed(dims))


@dataclass(kw_only=True, eq=False)
class BenchncnnAdapter(SummaryLineAdapter):
    framework = "ncnn"
    binary = "benchncnn"
    controls_precision = False
    result_re = _RESULT_RE
    count_re = _LOOP_RE
    result_line = "'<model>  min = ...  max = ...  avg = ...' line"

    powersave: int = 0
    gpu_device: int = -1

    def command(self, binary_path: str, cell: NativeCell) -> list[str]:
        if not cell.input_shapes:
            raise ValueError("benchncnn needs the input shapes (shape=[W,H,C]) of a param= model")
        shapes = ",".join(
            "[" + ",".join(str(d) for d in ncnn_shape(dims, name=name)) + "]"
            for name, dims in cell.input_shapes.items()
        )
        return [
            binary_path,
            str(cell.iterations),
            str(cell.threads),
            str(self.powersave),
            str(self.gpu_device),
            "0",  # cooling_down off
            f"param={cell.model_path}",
            f"shape={shapes}",
        ]
