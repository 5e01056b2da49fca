"""The runner's output: one JSON object (``edgebench.result/1``, run_result.py's ``RunResult``)
printed as the last stdout line after ``RESULT_PREFIX``. Its header comes from the spec, its
error from the exception that ended the cell; the cell's own fields come from
``cell.CellFacts``, and the whole is written through ``RunResult``.

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import json
import math
import os
import platform
import traceback
from typing import Any, Dict, Optional

from .protocol import RESULT_PREFIX, RESULT_SCHEMA
from .protocol.run_result import RunResult
from .protocol.tensors import INPUT_GENERATOR

#: How much of a traceback an error carries.
DETAIL_CHARS = 4000


def new_result(spec: Any) -> Dict[str, Any]:
    """A failed result with every header key, what the ``spec`` object says (as it came, even
    malformed) and nothing measured yet."""
    header = RunResult.header(spec, platform.python_version(), os.getpid())
    header.input_generator = INPUT_GENERATOR
    return header.to_json()


def checked(payload: Dict[str, Any], spec: Any) -> Dict[str, Any]:
    """``payload`` as ``RunResult`` writes it, so the line fits the protocol; a payload that
    does not (a bug in the runner) becomes an internal error naming the field."""
    try:
        return RunResult.from_json(payload).to_json()
    except ValueError as exc:
        result = new_result(spec)
        result["error"] = error_fields(
            "internal", "runner error: its result does not fit %s: %s" % (RESULT_SCHEMA, exc)
        )
        return result


def error_fields(kind: str, message: str, detail: Optional[str] = None) -> Dict[str, Any]:
    """The result's ``error``; ``detail`` (a traceback, stderr) keeps its last characters."""
    error: Dict[str, Any] = {"kind": kind, "message": message}
    if detail is not None:
        error["detail"] = detail[-DETAIL_CHARS:]
    return error


def out_of_memory(exc: MemoryError) -> Dict[str, Any]:
    return error_fields(
        "out_of_memory",
        "out of memory on the device (%s); use a smaller input or batch, or free memory"
        % (str(exc) or "MemoryError"),
        traceback.format_exc(),
    )


def internal_error(exc: Exception) -> Dict[str, Any]:
    return error_fields(
        "internal",
        "runner error: %s: %s" % (type(exc).__name__, exc),
        traceback.format_exc(),
    )


def json_safe(value: Any) -> Any:
    """``value`` with every NaN or infinite float as None: JSON has no such numbers, and a
    result line the host cannot read strictly would lose the whole measurement."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def result_line(payload: Dict[str, Any]) -> str:
    """The line the host reads: the prefix, then compact strict JSON."""
    return RESULT_PREFIX + json.dumps(json_safe(payload), separators=(",", ":")) + "\n"
