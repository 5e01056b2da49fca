"""Built-in models with symbolic input axes, for shape sweeps that convert one dynamic artifact.

The generators write static models (``1x3x224x224``). ``relax_inputs`` turns chosen input
axes into symbolic dims (``dim_param``), so a runtime, or a converter that keeps symbolic
dims, accepts other sizes on them. What an exporter baked into the graph for one size is
generalised on the way: a ``Reshape`` whose constant target holds a size derived from a
relaxed axis (the detector's ``[1, 3, 85, H/8 * W/8]``) gets ``0`` (copy the input's dim)
for a batch that passes straight through and ``-1`` for the one entry that absorbs the rest.

How it knows: ONNX shape inference runs at the model's own sizes (the *base*) and at a
*probe* with every relaxed axis doubled (doubling keeps the strides and the 2x up-sampling of
the built-ins aligned). A dim that differs between the two depends on a relaxed axis. A graph
that still cannot take the probe (a constant that fixes a relaxed size, like ViT's position
embedding) raises ``RelaxError``: that axis is not free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeGuard

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

from edgebench.models.registry import get_builtin

#: dim_param names of a rank-4 NCHW input's axes; other ranks name axis 0 ``batch`` and the
#: rest ``dim<axis>``. With several relaxed inputs, names other than ``batch`` get the input's
#: name in front (``<input>_height``): equal names would claim equal sizes.
NCHW_AXIS_NAMES = ("batch", "channels", "height", "width")

Shapes = dict[str, list[int] | None]


class RelaxError(ValueError):
    """The graph cannot take other sizes on the axes asked for."""


def relax_inputs(model: onnx.ModelProto, axes: Mapping[str, Sequence[int]]) -> onnx.ModelProto:
    """A copy of ``model`` whose input axes ``axes[name]`` are symbolic.

    The named inputs must have concrete sizes on every axis (the sizes at which the graph's
    constants were written). ``value_info`` is cleared, Reshape targets that depend on the
    relaxed axes are generalised (module docstring) and every output dim that depends on them
    becomes symbolic too. Raises ``RelaxError`` when the graph cannot take other sizes.
    """
    relaxed = onnx.ModelProto()
    relaxed.CopyFrom(model)
    graph = relaxed.graph
    del graph.value_info[:]
    wanted = {name: sorted(set(int(a) for a in axis_list)) for name, axis_list in axes.items()}
    base = _input_sizes(graph, wanted)
    probe = {
        name: [2 * size if axis in wanted.get(name, ()) else size for axis, size in enumerate(dims)]
        for name, dims in base.items()
    }
    if probe == base:
        return relaxed
    _generalize_reshapes(relaxed, base, probe)
    base_shapes = _infer(relaxed, base, strict=True)
    probe_shapes = _infer(relaxed, probe, strict=True)
    _check_reshapes(relaxed, probe_shapes)
    names = _axis_names(graph, wanted)
    for value in graph.input:
        for axis in wanted.get(value.name, ()):
            dim = value.type.tensor_type.shape.dim[axis]
            dim.ClearField("dim_value")
            dim.dim_param = names[value.name][axis]
    named = _named_changes(base, probe, names)
    for value in graph.output:
        _relax_output(value, base_shapes.get(value.name), probe_shapes.get(value.name), named)
    onnx.checker.check_model(relaxed)
    return relaxed


# -- sizes ------------------------------------------------------------------------------------


def _input_sizes(graph: onnx.GraphProto, wanted: Mapping[str, list[int]]) -> dict[str, list[int]]:
    """The concrete sizes of every graph input (initializers aside)."""
    initializers = {init.name for init in graph.initializer}
    sizes: dict[str, list[int]] = {}
    for value in graph.input:
        if value.name in initializers:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else 0 for d in _dims(value)]
        if not dims or any(d <= 0 for d in dims):
            raise RelaxError(
                f"input {value.name!r} has no concrete size on every axis ({dims}); "
                "relax_inputs starts from a static model"
            )
        sizes[value.name] = dims
    unknown = sorted(set(wanted) - set(sizes))
    if unknown:
        raise RelaxError(f"no graph inputs {unknown}; the model has {sorted(sizes)}")
    for name, axis_list in wanted.items():
        bad = [a for a in axis_list if not 0 <= a < len(sizes[name])]
        if bad:
            raise RelaxError(f"input {name!r} has rank {len(sizes[name])}: no axes {bad}")
    return sizes


def _dims(value: onnx.ValueInfoProto) -> Sequence[onnx.TensorShapeProto.Dimension]:
    return value.type.tensor_type.shape.dim


def _infer(model: onnx.ModelProto, inputs: Mapping[str, list[int]], strict: bool) -> Shapes:
    """Every tensor's shape (None where unknown) with the inputs at ``inputs``."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    del probe.graph.value_info[:]
    for value in probe.graph.input:
        if value.name in inputs:
            shape = value.type.tensor_type.shape
            shape.ClearField("dim")
            for size in inputs[value.name]:
                shape.dim.add().dim_value = int(size)
    for value in probe.graph.output:
        value.type.tensor_type.ClearField("shape")
    try:
        inferred = shape_inference.infer_shapes(probe, strict_mode=strict)
    except Exception as exc:  # onnx raises InferenceError, or a plain RuntimeError
        reason = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        raise RelaxError(f"the graph does not take inputs {dict(inputs)}: {reason}") from exc
    shapes: Shapes = {}
    for value in [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]:
        tensor = value.type.tensor_type
        if not tensor.HasField("shape"):
            shapes[value.name] = None
            continue
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim]
        shapes[value.name] = dims
    return shapes


def _known(shape: list[int] | None) -> TypeGuard[list[int]]:
    return shape is not None and all(d >= 0 for d in shape)


# -- Reshape targets --------------------------------------------------------------------------


def _generalize_reshapes(
    model: onnx.ModelProto, base: Mapping[str, list[int]], probe: Mapping[str, list[int]]
) -> None:
    """Rewrite, in graph order, each Reshape whose constant target is wrong at the probe.

    Shape inference does not compare a Reshape's element counts, so the probe is inferred
    again after each rewrite: a rewritten Reshape changes the shapes below it.
    """
    base_shapes = _infer(model, base, strict=False)
    reshapes = [n for n in model.graph.node if n.op_type == "Reshape"]
    done: set[int] = set()
    for _ in range(len(reshapes)):
        probe_shapes = _infer(model, probe, strict=False)
        pending = [
            (i, node)
            for i, node in enumerate(reshapes)
            if i not in done and not _counts_agree(node, probe_shapes)
        ]
        if not pending:
            return
        index, node = pending[0]
        target = _relaxed_target(node, base_shapes, probe_shapes)
        _set_target(model.graph, node, target)
        done.add(index)


def _counts_agree(node: onnx.NodeProto, shapes: Shapes) -> bool:
    data, out = shapes.get(node.input[0]), shapes.get(node.output[0])
    if not (_known(data) and _known(out)):
        return True  # nothing to compare (a rank-only shape): left to the final check
    return int(np.prod(data)) == int(np.prod(out))


def _check_reshapes(model: onnx.ModelProto, shapes: Shapes) -> None:
    for node in model.graph.node:
        if node.op_type == "Reshape" and not _counts_agree(node, shapes):
            raise RelaxError(
                f"Reshape {node.name!r} keeps a constant target at other input sizes: "
                f"{shapes.get(node.input[0])} -> {shapes.get(node.output[0])}"
            )


def _relaxed_target(node: onnx.NodeProto, base: Shapes, probe: Shapes) -> list[int]:
    """The Reshape target that gives the base shape at the base and fits the probe.

    The input and output dims at the base are grouped into runs of equal product (a merge
    or a split of neighbouring axes). A run whose product changes at the probe depends on a
    relaxed axis: a single dim carried to the same position becomes 0 (copy), a single
    output dim becomes -1; anything else is ambiguous.
    """
    if any(a.name == "allowzero" and a.i for a in node.attribute):
        raise RelaxError(f"Reshape {node.name!r} has allowzero=1; it cannot copy a dim")
    data_base, data_probe = base.get(node.input[0]), probe.get(node.input[0])
    out_base = base.get(node.output[0])
    if not (_known(data_base) and _known(data_probe) and _known(out_base)):
        raise RelaxError(f"Reshape {node.name!r}: its input or output shape is unknown")
    assert data_base is not None and data_probe is not None and out_base is not None
    target = list(out_base)
    unknown: list[int] = []
    for data_axes, out_axes in _groups(data_base, out_base, node.name):
        before = int(np.prod([data_base[a] for a in data_axes]))
        after = int(np.prod([data_probe[a] for a in data_axes]))
        if before == after:
            continue
        if data_axes == out_axes and len(out_axes) == 1:
            target[out_axes[0]] = 0
        elif len(out_axes) == 1:
            unknown.append(out_axes[0])
        else:
            raise RelaxError(
                f"Reshape {node.name!r} splits a relaxed size over several axes {out_axes}"
            )
    if len(unknown) > 1:
        raise RelaxError(f"Reshape {node.name!r} would need more than one -1 ({unknown})")
    for axis in unknown:
        target[axis] = -1
    return target


def _groups(data: list[int], out: list[int], name: str) -> list[tuple[list[int], list[int]]]:
    """Pair runs of input axes with runs of output axes of equal element count."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(data) or j < len(out):
        data_axes: list[int] = []
        out_axes: list[int] = []
        left = right = 1
        if i < len(data):
            data_axes.append(i)
            left, i = data[i], i + 1
        if j < len(out):
            out_axes.append(j)
            right, j = out[j], j + 1
        while left != right:
            if left < right and i < len(data):
                data_axes.append(i)
                left, i = left * data[i], i + 1
            elif right < left and j < len(out):
                out_axes.append(j)
                right, j = right * out[j], j + 1
            else:
                raise RelaxError(f"Reshape {name!r}: cannot pair {data} with {out}")
        groups.append((data_axes, out_axes))
    return groups


def _set_target(graph: onnx.GraphProto, node: onnx.NodeProto, target: list[int]) -> None:
    """Point the Reshape at a new initializer (the old one may be shared)."""
    constant = node.input[1]
    if not any(init.name == constant for init in graph.initializer) and not any(
        n.op_type == "Constant" and constant in n.output for n in graph.node
    ):
        raise RelaxError(f"Reshape {node.name!r}: its target {constant!r} is not a constant")
    taken = {init.name for init in graph.initializer} | {o for n in graph.node for o in n.output}
    name, suffix = f"{node.name or constant}.relaxed_shape", 1
    while name in taken:
        name, suffix = f"{node.name or constant}.relaxed_shape_{suffix}", suffix + 1
    graph.initializer.append(numpy_helper.from_array(np.array(target, dtype=np.int64), name))
    node.input[1] = name
    inputs = {v.name for v in graph.input}
    if constant not in inputs and not any(constant in n.input for n in graph.node):  # unused now
        kept = [init for init in graph.initializer if init.name != constant]
        del graph.initializer[:]
        graph.initializer.extend(kept)


# -- names ------------------------------------------------------------------------------------


def _axis_names(
    graph: onnx.GraphProto, wanted: Mapping[str, list[int]]
) -> dict[str, dict[int, str]]:
    """dim_param per relaxed axis (``NCHW_AXIS_NAMES``)."""
    several = len(wanted) > 1
    names: dict[str, dict[int, str]] = {}
    for value in graph.input:
        axis_list = wanted.get(value.name)
        if not axis_list:
            continue
        rank = len(_dims(value))
        names[value.name] = {}
        for axis in axis_list:
            if axis == 0:
                label = "batch"
            elif rank == 4:
                label = NCHW_AXIS_NAMES[axis]
            else:
                label = f"dim{axis}"
            if several and axis != 0:
                label = f"{value.name}_{label}"
            names[value.name][axis] = label
    return names


def _relax_output(
    value: onnx.ValueInfoProto,
    base: list[int] | None,
    probe: list[int] | None,
    named: Mapping[tuple[int, int], str],
) -> None:
    """Write the output's dims: fixed where base and probe agree, symbolic where they do not,
    named after the relaxed input axis that changes the same way (``batch``) if there is one."""
    tensor = value.type.tensor_type
    tensor.ClearField("shape")
    if base is None:
        return
    shape = tensor.shape
    for axis, size in enumerate(base):
        dim = shape.dim.add()
        after = probe[axis] if probe is not None and axis < len(probe) else -1
        if size >= 0 and after == size:
            dim.dim_value = size
        else:
            dim.dim_param = named.get((size, after)) or f"{value.name}_dim{axis}"


def _named_changes(
    base: Mapping[str, list[int]], probe: Mapping[str, list[int]], names: Mapping[str, dict]
) -> dict[tuple[int, int], str]:
    """(base size, probe size) -> the one relaxed input axis name that changes that way."""
    found: dict[tuple[int, int], set[str]] = {}
    for input_name, axis_names in names.items():
        for axis, label in axis_names.items():
            found.setdefault((base[input_name][axis], probe[input_name][axis]), set()).add(label)
    return {change: labels.pop() for change, labels in found.items() if len(labels) == 1}


def build_relaxed(name: str, seed: int = 0) -> onnx.ModelProto:
    """Built-in model ``name`` with its ``free_axes`` symbolic; ``RelaxError`` for a model
    that has none (vit-tiny)."""
    builtin = get_builtin(name)
    if not builtin.free_axes:
        raise RelaxError(
            f"{name} runs only at {'x'.join(map(str, builtin.input_shape))}: "
            "no input axis of it takes other sizes"
        )
    model = builtin.build(seed)
    return relax_inputs(model, {model.graph.input[0].name: list(builtin.free_axes)})
