"""ncnn ``benchncnn``.

Command (positional arguments, then ``key=value`` pairs; current builds)::

    benchncnn LOOPS THREADS 0 -1 0 param=model.param shape=[W,H,C][,[W,H,C]...]

``powersave`` 0 (all cores: affinity comes from taskset instead), ``gpu_device`` -1 on the CPU
and the Vulkan device's index for a ``vulkan`` cell (0, the registry's, unless the adapter's
``gpu_device`` names another), and ``cooling_down`` 0 (the default 1 sleeps 10 s before each
model). Only the ``.param`` is
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
GPU device lines (``[0 Adreno (TM) 640]  queueC=...``) are never results.

Vulkan (ncnn's src/gpu.cpp, to stderr when the Vulkan instance is created)::

    [0 llvmpipe (LLVM 15.0.6, 256 bits)]  queueC=0[1]  queueG=0[1]  queueT=0[1]
    [0 llvmpipe (LLVM 15.0.6, 256 bits)]  fp16-p/s/u/a=1/1/1/1  int8-p/s/u/a=1/1/1/1

(2022 builds print ``fp16-p/s/a=1/0/1``, older ones ``fp16p=1  fp16s=0  fp16a=1``). The line of the
cell's device gives the record's device; benchncnn turns on fp16 packing, storage and
arithmetic, so the precision is fp16 where the device supports any of them. A build without
NCNN_VULKAN prints no device line and runs on the CPU: a fallback. Without a usable device
the tool prints ``no vulkan device`` (or ``load vulkan driver failed``) and crashes before a
result: a refusal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from edgebench.runners.protocol.devices import software_kind

from .accelerator import BackendReport, accelerator_run, quote, tool_argument
from .base import NUMBER, SummaryLineAdapter, ToolCell, shape_arg

# A GPU device line (`[0 Adreno (TM) 640]  queueC=...`) is never a result.
_RESULT_RE = re.compile(
    r"^(?!\[\d+ )"
    rf"(?P<label>.*?)\s*\bmin\s*=\s*(?P<min>{NUMBER})\s*(?:ms)?\s+max\s*=\s*(?P<max>{NUMBER})"
    rf"\s*(?:ms)?\s+avg\s*=\s*(?P<avg>{NUMBER})\s*(?:ms)?\s*$",
    re.ASCII,
)
_LOOP_RE = re.compile(r"^loop_count\s*=\s*(\d+)\s*$", re.ASCII)
_DEVICE_RE = re.compile(r"^\[(?P<index>\d+) (?P<name>.+?)\]\s+queueC=", re.ASCII)
# `fp16-p/s/u/a=1/1/1/1` (current), `fp16-p/s/a=1/0/1` (2022) or `fp16p=1  fp16s=0  fp16a=1`.
_FP16_RE = re.compile(
    r"^\[(?P<index>\d+) .+?\]\s+fp16(?:-(?P<keys>[a-z/]+)=(?P<flags>[\d/]+)|[psa]=)", re.ASCII
)
_FP16_OLD_RE = re.compile(r"\bfp16(?P<key>[psa])=(?P<flag>\d)", re.ASCII)
_NO_VULKAN_RE = re.compile(
    r"no vulkan device|load vulkan driver failed|vkCreateInstance failed|"
    r"vkEnumeratePhysicalDevices failed|vkCreateDevice failed"
)


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
    no_op_profile = (
        "benchncnn prints only whole-model min/max/avg "
        "(per-layer times need a ncnn build with NCNN_BENCHMARK)"
    )

    powersave: int = 0
    #: The Vulkan device a ``vulkan`` cell runs on (None: the registry's, device 0).
    gpu_device: int | None = None

    def device_index(self, cell: ToolCell) -> int:
        """benchncnn's ``gpu_device`` for ``cell``: -1 on the CPU."""
        selected = tool_argument(self.framework, cell.backend)
        if selected is None:
            return -1
        return self.gpu_device if self.gpu_device is not None else int(selected)

    def command(self, binary_path: str, cell: ToolCell) -> list[str]:
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
            str(self.device_index(cell)),
            "0",  # cooling_down off
            f"param={cell.model_path}",
            f"shape={shapes}",
        ]

    def accelerator_lines(self, cell: ToolCell, lines: list[str]) -> BackendReport:
        index = self.device_index(cell)
        names = {m["index"]: m["name"] for m in map(_DEVICE_RE.match, lines) if m}
        name = names.get(str(index))
        ran = any(self.result_re.match(line) for line in lines)
        if name is None:
            refused = [line for line in lines if _NO_VULKAN_RE.search(line)]
            if not ran:
                return BackendReport(refusal=quote(self.tool, refused) if refused else None)
            return BackendReport(
                fallback=quote(self.tool, refused)
                if refused
                else f"{self.tool} printed no Vulkan device line for gpu_device {index} "
                "(a build without NCNN_VULKAN runs on the CPU)"
            )
        return BackendReport(
            run=accelerator_run(
                self.framework,
                cell.backend,
                device=name,
                software=software_kind("Vulkan", name, "") is not None,
                precision=_precision(lines, index),
                stages_note="benchncnn times extract(), which includes the upload and the download",
            )
        )


def _precision(lines: list[str], index: int) -> str | None:
    """fp16 when the device supports fp16 packing, storage or arithmetic (benchncnn turns them
    all on), fp32 when it supports none, None when the tool did not say."""
    for line in lines:
        match = _FP16_RE.match(line)
        if match is None or match["index"] != str(index):
            continue
        if match["keys"]:
            flags = dict(zip(match["keys"].split("/"), match["flags"].split("/"), strict=False))
        else:
            flags = {m["key"]: m["flag"] for m in _FP16_OLD_RE.finditer(line)}
        return "fp16" if any(flags.get(key) == "1" for key in "psa") else "fp32"
    return None
