"""What a framework's own tool says about the accelerator a cell asked for.

Each adapter reads its tool's output for three things: the device the backend ran on (the
record's ``accelerator`` part, as a dict with ``AcceleratorRun``'s keys, the way the Python
runner reports it), the tool's words when it ran on the CPU instead (a
*fallback*: the cell must never carry a GPU figure), and, when the tool printed no result, its
words saying the backend is not there (a *refusal*: the cell is ``unsupported``, not failed).

A tool that printed a result without any line showing the accelerator took the model is read as
a fallback too: builds without the backend ignore the flag (benchncnn without NCNN_VULKAN,
benchmark_model's ``--use_nnapi`` off Android), so silence is not evidence of a GPU run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from edgebench.compute_backends import CPU, find_backend, missing_backend_reason

#: How many of the tool's lines a reason quotes, and how long each may be.
_QUOTED_LINES = 3
_QUOTED_CHARS = 200


def quote(tool: str, lines: Iterable[str]) -> str:
    """The tool's own words, at most a few lines: ``benchncnn: "no vulkan device"``."""
    picked = list(dict.fromkeys(line.strip() for line in lines if line.strip()))
    shown = [f'"{line[:_QUOTED_CHARS]}"' for line in picked[:_QUOTED_LINES]]
    return f"{tool}: {'; '.join(shown)}"


@dataclass
class BackendReport:
    """What one run of a tool said about the cell's backend (see the module docs)."""

    run: dict[str, Any] | None = None
    fallback: str | None = None
    refusal: str | None = None


def accelerator_run(framework: str, backend: str, **found: Any) -> dict[str, Any]:
    """The record's ``accelerator`` part: the registry's API unless the tool named another, and
    what the tool printed (``device``, ``precision``, ``delegated_ops``, ...; None is left out)."""
    entry = find_backend(framework, backend)
    api = found.pop("api", None) or (entry.api if entry is not None else backend)
    return {"api": api, **{key: value for key, value in found.items() if value is not None}}


def tool_argument(framework: str, backend: str) -> str | None:
    """The value the framework's tool takes for ``backend`` (None for ``cpu``); raises
    ValueError naming the reason when the tool cannot select it."""
    if backend == CPU:
        return None
    missing = missing_backend_reason(framework, backend)
    if missing is not None:
        raise ValueError(missing)
    entry = find_backend(framework, backend)
    if entry is None or entry.tool_arg is None:
        needs = f"; it needs {entry.provides}" if entry is not None else ""
        raise ValueError(f"{framework}'s own benchmark tool cannot select {backend}{needs}")
    return entry.tool_arg


def tool_refusal(framework: str, backend: str, *, android: bool, device: str) -> str | None:
    """Why the framework's tool cannot run ``backend`` on ``device`` (None: it can try).

    The reasons come from the registry (edgebench/compute_backends.py): a backend the framework
    lacks, one its tool cannot select, and NNAPI off Android (Android's API: benchmark_model
    built for another OS ignores ``--use_nnapi`` without a word)."""
    try:
        tool_argument(framework, backend)
    except ValueError as exc:
        return str(exc)
    entry = find_backend(framework, backend)
    if entry is not None and entry.api == "NNAPI" and not android:
        return (
            f"{entry.api} exists only on Android and {device} is not an Android (adb) device; "
            f"{framework}·{backend} needs {entry.provides}"
        )
    return None
