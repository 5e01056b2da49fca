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

from .base import (
    NUMBER,
    NativeAdapter,
    NativeCell,
    NativeParseError,
    NativeResult,
    finite_or_none,
    int_or_none,
    shape_arg,
    streams,
)

_RESULT_RE = re.compile(
    rf"^(?P<label>.*?)\s*\bmin\s*=\s*(?P<min>{NUMBER})\s*(?:ms)?\s+max\s*=\s*(?P<max>{NUMBER})"
    rf"\s*(?:ms)?\s+avg\s*=\s*(?P<avg>{NUMBER})\s*(?:ms)?\s*$",
    re.ASCII,
)
_LOOP_RE = re.compile(r"^loop_count\s*=\s*(\d+)\s*$", re.ASCII)
_GPU_INFO_RE = re.compile(r"^\[\d+ ", re.ASCII)


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


class BenchncnnAdapter(NativeAdapter):
    framework = "ncnn"
    binary = "benchncnn"
    tool = "benchncnn"
    controls_precision = False

    def __init__(
        self, *, powersave: int = 0, gpu_device: int = -1, env: dict[str, str] | None = None
    ) -> None:
        super().__init__(env=env)
        self.powersave = powersave
        self.gpu_device = gpu_device

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

    def parse(
        self, stdout: str, stderr: str = "", logcat: str = "", *, model_path: str | None = None
    ) -> NativeResult:
        missing = "'<model>  min = ...  max = ...  avg = ...' line"
        for lines in streams(stdout, stderr, logcat):
            candidates = []
            loop_count = None
            loop_line = None
            for line in lines:
                if _GPU_INFO_RE.match(line):
                    continue
                loop = _LOOP_RE.match(line)
                if loop:
                    loop_count, loop_line = int_or_none(loop.group(1)), line
                    continue
                match = _RESULT_RE.match(line)
                if match:
                    candidates.append((match.group("label"), (match, line)))
            if not candidates:
                continue
            match, line = self._select(candidates, model_path, missing)  # type: ignore[misc]
            result = NativeResult(
                tool=self.tool,
                count=loop_count,
                min_ms=finite_or_none(match.group("min")),
                max_ms=finite_or_none(match.group("max")),
                avg_ms=finite_or_none(match.group("avg")),
                raw_lines=[x for x in (loop_line, line) if x is not None],
            )
            if result.avg_ms is None and result.min_ms is None:
                raise NativeParseError(self.tool, missing, "no finite timings")
            return result.finish()
        raise NativeParseError(self.tool, missing)
