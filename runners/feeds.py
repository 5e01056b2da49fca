"""What a cell feeds the model: the spec's input shapes over the model's own, checked against a
fixed-shape artifact, filled with seeded values or read from the host's input file.

Runs on the device: Python 3.8+, numpy and the backends; imports nothing from the host package.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from .protocol.errors import BackendError
from .protocol.input_spec import InputSpec
from .protocol.tensors import load_inputs, make_inputs


@dataclass
class Feeds:
    """The inputs as resolved and the arrays fed for them."""

    inputs: List[InputSpec]
    arrays: Dict[str, Any]
    from_file: bool

    def as_json(self) -> List[Dict[str, Any]]:
        """The result line's ``inputs``: each input's name, shape and dtype (and its source
        when the host's file gave it)."""
        entries = [i.as_dict() for i in self.inputs]
        if self.from_file:
            for entry in entries:
                entry["source"] = "file"
        return entries


def resolve_inputs(
    requested: Optional[List[Dict[str, Any]]], model_inputs: List[InputSpec]
) -> List[InputSpec]:
    """The model's inputs with the shapes (and dtypes) ``requested`` names; bad_spec when it
    names an input the model does not have."""
    if not requested:
        return model_inputs
    by_name = {item["name"]: item for item in requested}
    resolved = []
    for model_input in model_inputs:
        item = by_name.get(model_input.name)
        if item is None:
            resolved.append(model_input)
            continue
        resolved.append(
            InputSpec(model_input.name, item["shape"], item.get("dtype") or model_input.dtype)
        )
    unknown = sorted(set(by_name) - {i.name for i in model_inputs})
    if unknown:
        raise BackendError(
            "bad_spec",
            "inputs %s are not inputs of the model (it has %s)"
            % (unknown, [i.name for i in model_inputs]),
        )
    return resolved


def check_fixed_shapes(
    inputs: List[InputSpec], model_inputs: List[InputSpec], model_path: str
) -> None:
    """Refuse inputs whose shape a fixed-shape artifact was not converted for: frameworks
    would otherwise fail deep inside or, worse, run on misread memory."""
    fixed = {i.name: i.shape for i in model_inputs}
    for wanted in inputs:
        have = fixed.get(wanted.name)
        if not have or len(have) != len(wanted.shape):
            continue
        if any(h > 0 and h != w for h, w in zip(have, wanted.shape)):
            raise BackendError(
                "bad_spec",
                "%s has a fixed input %s of shape %s, not %s: convert it for that shape, or "
                "use a dynamic artifact (--shape-mode dynamic)"
                % (os.path.basename(model_path), wanted.name, have, wanted.shape),
            )


def prepare_feeds(
    requested: Optional[List[Dict[str, Any]]],
    model_inputs: List[InputSpec],
    model_path: str,
    seed: int,
    input_file: Optional[str] = None,
) -> Feeds:
    """The cell's feeds: from ``input_file`` when given, else seeded with ``seed``."""
    inputs = resolve_inputs(requested, model_inputs)
    check_fixed_shapes(inputs, model_inputs, model_path)
    if input_file:
        return Feeds(inputs, load_inputs(input_file, inputs), True)
    return Feeds(inputs, make_inputs(inputs, seed), False)
