"""The backend half of a cell: which (framework, backend) pairs exist, whether the runner
that measures a framework on a device can select the backend, and how a cell on a software
accelerator is sized. ``cells.build_cells`` asks these for every pair."""

from __future__ import annotations

import itertools
import logging
import weakref
from collections.abc import Sequence
from dataclasses import replace

from edgebench.compute_backends import (
    CPU,
    default_backend,
    find_backend,
    missing_backend_reason,
)
from edgebench.lab.accelerator_facts import accelerator_devices
from edgebench.lab.device import Device
from edgebench.lab.runner_kinds import RunnerKind
from edgebench.planning.config import TimingConfig
from edgebench.statuses import ErrorKind, Status

log = logging.getLogger(__name__)

#: (status, error kind, reason) of a cell decided without measuring it.
Verdict = tuple[str, str, str]


#: Per backend API, the API whose devices the probe enumerates for it (TensorRT runs on CUDA
#: devices).
PROBED_APIS = {"CUDA": "CUDA", "TensorRT": "CUDA"}


#: The most samples a cell on a software accelerator takes: its figure ranks nothing, and
#: lavapipe takes ~25x the CPU's time per inference.
SOFTWARE_DEVICE_ITERATIONS = 3


def software_device_timing(timing: TimingConfig) -> TimingConfig:
    """A cell on a software accelerator (lavapipe, pocl): its outputs and the first inference
    (shader compilation) are what it proves, plus a few steady samples; no minimum time."""
    return replace(
        timing,
        warmup=min(timing.warmup, 1),
        iterations=min(timing.iterations, SOFTWARE_DEVICE_ITERATIONS),
        min_time_s=0.0,
        sustained_s=None,
        target_ci_pct=None,
    )


def software_only(device: Device, framework: str, backend: str) -> bool:
    """Whether every device of the API ``backend`` drives on ``device`` is a software one, as
    its facts say (the runner's report decides the record; this only sizes the cell)."""
    entry = find_backend(framework, backend)
    if entry is None or entry.api not in ("Vulkan", "OpenCL"):
        return False
    devices = accelerator_devices(device.facts(), entry.api)
    return bool(devices) and all(d.software for d in devices)


#: The registry column that says how each runner kind selects a backend.
_SELECTED_BY = {
    RunnerKind.PYTHON: ("python", "the Python runner"),
    RunnerKind.EDGEBENCH_NATIVE: ("edgebench_native", "edgebench-native"),
    RunnerKind.FRAMEWORK_TOOLS: ("tool", "the framework's own benchmark tool"),
}


#: Devices already told which (framework, backend) pairs do not exist.
_WARNED_PAIRS: weakref.WeakKeyDictionary[Device, set[str]] = weakref.WeakKeyDictionary()


def existing_pairs(
    device: Device, frameworks: Sequence[str], backends: Sequence[str]
) -> list[tuple[str, str]]:
    """The (framework, backend) pairs that exist (edgebench/compute_backends.py), in framework
    then backend order. A pair that does not (ncnn has no OpenCL backend) gets no cell, only
    one warning line per device: a matrix of columns that can never hold a figure helps no one."""
    pairs = []
    warned = _WARNED_PAIRS.setdefault(device, set())
    for framework, backend in itertools.product(frameworks, backends):
        missing = missing_backend_reason(framework, backend)
        if missing is None:
            pairs.append((framework, backend))
        elif missing not in warned:
            warned.add(missing)
            log.warning("note: %s: no cell on %s", missing, device.name)
    return pairs


#: What a run that can plan no cell is told to change.
NO_CELL_HINT = (
    "choose --frameworks and --backends that meet (docs/accelerators.md lists each "
    "framework's backends)"
)


def no_pair_reason(frameworks: Sequence[str], backends: Sequence[str]) -> str | None:
    """Why none of ``frameworks`` has any of ``backends`` (each missing pair's reason, once),
    so that no device can hold a cell; None when a pair exists or no backend is named."""
    reasons = [missing_backend_reason(f, b) for f, b in itertools.product(frameworks, backends)]
    if not reasons or None in reasons:
        return None
    return "; ".join(dict.fromkeys(r for r in reasons if r is not None))


def no_cell_refusal(frameworks: Sequence[str], backends: Sequence[str]) -> str | None:
    """The one line that refuses a run whose named backends allow no cell at all, before a
    device is probed; None when a cell is possible. Such a run must never be stored: an empty
    run would become the newest, the default of `show` and `accept`."""
    why = no_pair_reason(frameworks, backends)
    return f"no cell is possible: {why}; {NO_CELL_HINT}" if why else None


def no_cells_planned(
    devices: Sequence[Device], frameworks: Sequence[str], backends: Sequence[str]
) -> str:
    """The one line that refuses a run that planned no cell: on each device, the backends it
    was to use (the run's, else its lab list) that none of ``frameworks`` has."""
    reasons = []
    for device in devices:
        device_backends = list(backends or getattr(device, "lab_backends", None) or [])
        why = no_pair_reason(frameworks, device_backends)
        if why:
            reasons.append(f"on {device.name}: {why}")
    where = "; ".join(reasons) or "(no device, model and framework to combine)"
    return f"no cell is possible {where}; {NO_CELL_HINT}"


def defaulted_pairs(
    device: Device, frameworks: Sequence[str], frameworks_chosen: bool
) -> list[tuple[str, str]]:
    """Each framework on its default backend, for a run that names no backends. A framework
    without a CPU backend (TensorRT) that the run did not name either is left out, with no
    line, on a device whose facts show none of its accelerator: the default matrix of a
    machine without an NVIDIA GPU has no TensorRT column that can never hold a figure."""
    pairs = []
    for framework in frameworks:
        backend = default_backend(framework)
        if (
            backend != CPU
            and not frameworks_chosen
            and not _has_api_device(device, framework, backend)
        ):
            continue
        pairs.append((framework, backend))
    return pairs


def _probed_api(framework: str, backend: str) -> str | None:
    """The API whose devices the probe lists for the backend (TensorRT's is CUDA); None for a
    backend whose API the probe does not vouch for (CPU, or unknown pairs)."""
    entry = find_backend(framework, backend)
    return PROBED_APIS.get(entry.api) if entry is not None else None


def _has_api_device(device: Device, framework: str, backend: str) -> bool:
    api = _probed_api(framework, backend)
    if api is None or device.unreachable:
        return False
    return bool(accelerator_devices(device.facts(), api))


def device_api_verdict(device: Device, framework: str, backend: str) -> Verdict | None:
    """``unsupported`` with the probe's line (``no NVIDIA GPU: nvidia-smi not found``) when
    the device has no device of the API the backend drives; None otherwise or when unknown."""
    api = _probed_api(framework, backend)
    if api is None or device.unreachable:
        return None
    facts = device.facts()
    if accelerator_devices(facts, api):
        return None
    problem = getattr(facts, "accelerator_problems", {}).get(api)
    if problem is None:
        return None
    # The probe's line names what is missing: the GPU comes before anything else it needs.
    return (Status.UNSUPPORTED, ErrorKind.UNSUPPORTED, problem)


def backend_verdict(device: Device, framework: str, backend: str) -> Verdict | None:
    """None when the runner that measures ``framework`` on ``device`` can select ``backend``,
    else an ``unsupported`` verdict whose reason names what would provide it."""
    entry = find_backend(framework, backend)
    if entry is None:
        return None  # cpu (pairs that do not exist get no cell)
    choice = device.runner_for(framework)
    kind = choice.kind if choice is not None else device.runner_kind
    column, runner = _SELECTED_BY.get(kind, ("python", "the Python runner"))
    if getattr(entry, column) is not None:
        return _build_verdict(device, framework, backend, kind, entry.provides)
    others = [name for col, name in _SELECTED_BY.values() if getattr(entry, col) is not None]
    via = f" ({' or '.join(others)} can)" if others else ""
    return (
        Status.UNSUPPORTED,
        ErrorKind.UNSUPPORTED,
        f"{runner} cannot run {framework} on {backend}{via}; it needs {entry.provides}",
    )


def _build_verdict(
    device: Device, framework: str, backend: str, kind: RunnerKind, provides: str
) -> Verdict | None:
    """An edgebench-native build says which backends it compiled in for each framework (its
    probe's ``backends``); one without ``backend`` cannot run the cell."""
    if kind != RunnerKind.EDGEBENCH_NATIVE:
        return None
    info = getattr(device.facts(), "frameworks", {}).get(framework) or {}
    compiled = info.get("backends")
    if compiled is None or backend in compiled:
        return None
    return (
        Status.UNSUPPORTED,
        ErrorKind.UNSUPPORTED,
        f"this edgebench-native build has {framework} on {', '.join(compiled)} only, not "
        f"{backend}; it needs {provides}",
    )
