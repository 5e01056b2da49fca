"""What the toolchain converters (ncnn, TFLite) share: their base class, a staged copy of the
model with its input/output description, a scratch folder, and running a tool from a toolchain
venv."""

from __future__ import annotations

import json
import os
import re
import shutil
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

import onnx

from .base import ConversionError, ConversionOptions, Converter, unsupported_op
from .isolation import ToolRun, isolated_env, last_line, run_tool
from .toolchains import (
    require_toolchain,
    toolchain_bin,
    toolchain_bin_dir,
    toolchain_home,
    toolchain_status,
    toolchain_unavailable,
)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_LEAKY_VARS = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV")


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: list[int] | None  # None (or a -1 entry) where the model does not fix it
    dtype: str  # numpy name, e.g. "float32"


@dataclass(frozen=True)
class ModelIO:
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    #: op type -> name of its first node, to name the node in unsupported-op errors.
    first_node: dict[str, str]

    def node_of(self, op_type: str) -> str:
        return self.first_node.get(op_type, "?")


@dataclass(frozen=True)
class StagedModel:
    path: Path  # the copy the tool may read and rewrite
    io: ModelIO | None  # None when the file is not a readable ONNX model (the tool will say)

    @property
    def work(self) -> Path:
        """The scratch folder the copy is in, where the tool runs and writes."""
        return self.path.parent


@contextmanager
def scratch_dir(out_dir: Path, tool: str) -> Iterator[Path]:
    """A fresh working folder inside out_dir (same file system), removed afterwards."""
    work = out_dir / f".{tool}-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def stage_model(onnx_path: Path, work: Path, input_shapes: dict[str, list[int]]) -> StagedModel:
    """Copy the model into work as model.onnx, with the given input shapes written into it.

    Every model input needs a concrete shape: from input_shapes or, failing that, the model.
    """
    target = work / "model.onnx"
    try:
        model = onnx.load(str(onnx_path))
    except Exception:  # not ONNX: hand the bytes over anyway so the tool's own error is logged
        shutil.copyfile(onnx_path, target)
        return StagedModel(target, None)
    initializers = {init.name for init in model.graph.initializer}
    graph_inputs = [v for v in model.graph.input if v.name not in initializers]
    unknown = sorted(set(input_shapes) - {v.name for v in graph_inputs})
    if unknown:
        raise ConversionError("failed", f"input shapes given for unknown inputs: {unknown}")
    for value in graph_inputs:
        if value.name in input_shapes:
            _set_shape(value, input_shapes[value.name])
    io = _model_io(model, graph_inputs)
    for spec in io.inputs:
        if spec.shape is None or any(d <= 0 for d in spec.shape):
            raise ConversionError(
                "failed",
                f"input {spec.name!r} has no fixed shape ({spec.shape}); "
                "give concrete input shapes (--shape name=1,3,224,224)",
            )
    if input_shapes or _has_external_data(model):
        onnx.save(model, str(target))
    else:
        shutil.copyfile(onnx_path, target)
    return StagedModel(target, io)


def _set_shape(value: onnx.ValueInfoProto, shape: list[int]) -> None:
    tensor_shape = value.type.tensor_type.shape
    tensor_shape.ClearField("dim")
    for size in shape:
        tensor_shape.dim.add().dim_value = int(size)


def _dims(value: onnx.ValueInfoProto) -> list[int] | None:
    tensor = value.type.tensor_type
    if not tensor.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim]


def _spec(value: onnx.ValueInfoProto) -> TensorSpec:
    elem = value.type.tensor_type.elem_type
    try:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(elem).name
    except (KeyError, TypeError, ValueError):
        dtype = "unknown"
    return TensorSpec(value.name, _dims(value), dtype)


def _model_io(model: onnx.ModelProto, graph_inputs: list[onnx.ValueInfoProto]) -> ModelIO:
    outputs = list(model.graph.output)
    try:  # output shapes for the io.json; a model shape inference cannot handle keeps its own
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
        by_name = {v.name: v for v in inferred.graph.output}
        outputs = [by_name.get(v.name, v) for v in outputs]
    except Exception:
        pass
    first_node: dict[str, str] = {}
    for index, node in enumerate(model.graph.node):
        first_node.setdefault(node.op_type, node.name or f"#{index}")
    return ModelIO([_spec(v) for v in graph_inputs], [_spec(v) for v in outputs], first_node)


def _has_external_data(model: onnx.ModelProto) -> bool:
    return any(init.data_location == onnx.TensorProto.EXTERNAL for init in model.graph.initializer)


def run_in_toolchain(toolchain: str, argv: Sequence[str], *, cwd: Path, timeout: float) -> ToolRun:
    """Run argv with the toolchain's scripts first on PATH, a private HOME, no network."""
    env = isolated_env(toolchain_home(toolchain))
    for key in _LEAKY_VARS:
        env.pop(key, None)
    tmp = cwd / "tmp"
    tmp.mkdir(exist_ok=True)
    env.update(
        PATH=os.pathsep.join([str(toolchain_bin_dir(toolchain)), env.get("PATH", os.defpath)]),
        TMPDIR=str(tmp),
        PYTHONNOUSERSITE="1",
    )
    run = run_tool(argv, cwd=cwd, env=env, timeout=timeout)
    return ToolRun(run.returncode, strip_ansi(run.log), run.duration_s, run.timed_out)


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def check_run(run: ToolRun, tool: str, timeout: float) -> None:
    """Raise ConversionError "failed" for a run that timed out or exited non-zero."""
    if run.timed_out:
        raise ConversionError("failed", f"{tool} timed out after {timeout:.0f} s", run.log)
    if run.returncode != 0:
        raise ConversionError(
            "failed",
            f"{tool} exited with status {run.returncode}: {last_line(run.log)}",
            run.log,
        )


IO_SCHEMA = "edgebench.io/1"


def write_io_json(path: Path, fmt: str, inputs: list[dict], outputs: list[dict], **extra) -> None:
    """The artifact's io.json in the format ``runners/protocol/io_map.py`` reads."""
    payload = {"schema": IO_SCHEMA, "format": fmt, **extra, "inputs": inputs, "outputs": outputs}
    path.write_text(json.dumps(payload, indent=1) + "\n")


def tensor_entry(
    spec: TensorSpec, name: str, shape: list[int] | None, perm: list[int] | None, **extra: object
) -> dict:
    """One io.json tensor: ONNX name/shape, the artifact's name/shape, and ``perm``, the axis
    order that turns the ONNX-layout tensor into the artifact's (``numpy.transpose(x, perm)``)."""
    return {
        "onnx_name": spec.name,
        "onnx_shape": spec.shape if known_shape(spec.shape) else None,
        "name": name,
        "shape": shape,
        "perm": perm,
        "dtype": spec.dtype,
        **extra,
    }


def known_shape(shape: list[int] | None) -> TypeGuard[list[int]]:
    return shape is not None and all(d > 0 for d in shape)


class ToolchainConverter(Converter):
    """A converter whose tool lives in one of the isolated toolchains: its version and its
    availability are the toolchain's. ``convert`` stages the model in a scratch folder inside
    the output folder and leaves the rest to ``convert_staged``, which runs the tool with
    ``run_tool``."""

    #: The toolchain's name (`edgebench toolchains install NAME`); by default the format's.
    toolchain_name = ""
    #: The converting tool, as named in the version string (part of the cache key).
    tool = ""
    precisions: tuple[str, ...] = ("fp32", "fp16")
    timeout_s = 600.0

    @property
    def toolchain(self) -> str:
        return self.toolchain_name or self.format

    def version(self) -> str:
        return f"{self.tool}-{toolchain_status(self.toolchain).version or 'missing'}"

    def unavailable_reason(self) -> str | None:
        return toolchain_unavailable(self.toolchain)

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        require_toolchain(self.toolchain)
        onnx_path, out_dir = Path(onnx_path).resolve(), Path(out_dir).resolve()
        with scratch_dir(out_dir, self.tool) as work:
            staged = stage_model(onnx_path, work, options.input_shapes)
            return self.convert_staged(staged, out_dir, options.precision)

    @abstractmethod
    def convert_staged(self, staged: StagedModel, out_dir: Path, precision: str) -> list[str]:
        """Convert the staged copy (in its scratch folder) into artifact files in ``out_dir``."""

    @abstractmethod
    def unsupported_in(self, log: str, crashed: bool) -> str | None:
        """The operator the tool's output says it could not convert; None when there is none."""

    def run_tool(self, args: Sequence[str], staged: StagedModel) -> ToolRun:
        """Run the converting tool with ``args`` in the scratch folder; its output becomes
        ``last_log``.

        Raises ConversionError "unsupported_op" for an operator the tool could not convert,
        "failed" for a run that timed out or exited non-zero.
        """
        argv = [str(toolchain_bin(self.toolchain, self.tool)), *args]
        run = run_in_toolchain(self.toolchain, argv, cwd=staged.work, timeout=self.timeout_s)
        self.last_log = run.log
        op_type = self.unsupported_in(run.log, crashed=run.returncode != 0)
        if op_type:
            raise self.unsupported(op_type, staged.io, run.log)
        check_run(run, self.tool, self.timeout_s)
        return run

    def unsupported(
        self, op_type: str, io: ModelIO | None, log: str, note: str = ""
    ) -> ConversionError:
        """The "unsupported_op" error for ``op_type``, naming its first node in the model."""
        error = unsupported_op(op_type, io.node_of(op_type) if io else "?", self.format)
        return ConversionError(error.kind, error.message + note, log)
