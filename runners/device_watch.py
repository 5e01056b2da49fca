"""Device watches: what the device did over one cell's timed window, reported as one part of
the result. The generic cell (cell.py) knows watches only through this contract, so a vendor's
facts (NVIDIA's GPU, a Jetson's power mode) come from the module that knows them.

A watch is a ``DeviceWatch`` subclass:

    key = "nvidia"           # the result part its report fills (a RunResult field)
    for_cell(compute_backend, root)  # classmethod, called before the model loads: the watch
                             # of a cell on that backend, on the sysfs under ``root``; None
                             # when it has nothing to watch there. Keep it cheap: anything
                             # costly (a driver library opened) belongs in the window or the
                             # report, so the cell's load figures are its own.
    window_hooks()           # timed-region hooks entered around the window, after the
                             # backend's (so innermost), like Backend.window_hooks
    report()                 # once the cell's memory figures are read: the part, or None

Two places contribute watches: ``DEVICE_WATCHES`` below (the device's, tried for every cell)
and a backend module's ``WATCHES`` (backends/__init__.py; tried for that framework's cells).
A cell's watches are its backend's, then the device's; a result key is filled by the first of
them that reports for it.

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import importlib
from dataclasses import fields
from typing import Any, ContextManager, Dict, List, Optional, Sequence, Type

from .protocol.run_result import RunResult

#: Runner modules whose ``WATCH`` (a DeviceWatch subclass) watches every cell on the device.
DEVICE_WATCHES = ("nvidia_cell",)

#: The keys a report may fill: the result's parts (RunResult drops a key it does not know).
RESULT_KEYS = frozenset(f.name for f in fields(RunResult))


class DeviceWatch:
    """One cell's watch over the timed window (see the module docs)."""

    key = ""

    @classmethod
    def for_cell(cls, compute_backend: str, root: str) -> Optional[DeviceWatch]:
        raise NotImplementedError

    def window_hooks(self) -> List[ContextManager[Any]]:
        return []

    def report(self) -> Optional[Dict[str, Any]]:
        return None


def checked_watch(provider: Any, where: str) -> Type[DeviceWatch]:
    """``provider`` when it is a DeviceWatch subclass filling a result key; a TypeError naming
    ``where`` it was declared otherwise."""
    if not (isinstance(provider, type) and issubclass(provider, DeviceWatch)):
        raise TypeError("%s: %r is not a DeviceWatch subclass" % (where, provider))
    if provider.key not in RESULT_KEYS:
        raise TypeError(
            "%s: %s fills %r, which is not a key of the result"
            % (where, provider.__name__, provider.key)
        )
    return provider


def device_watches() -> List[Type[DeviceWatch]]:
    """The device's watches, each module of ``DEVICE_WATCHES`` imported by name."""
    found = []
    for name in DEVICE_WATCHES:
        module = importlib.import_module("." + name, __package__)
        found.append(checked_watch(getattr(module, "WATCH", None), "%s.WATCH" % name))
    return found


def cell_watches(
    declared: Sequence[Type[DeviceWatch]], compute_backend: str, root: str
) -> List[DeviceWatch]:
    """The watches of one cell: its backend's ``declared`` ones, then the device's."""
    providers = [*declared, *device_watches()]
    watches = (provider.for_cell(compute_backend, root) for provider in providers)
    return [watch for watch in watches if watch is not None]


def window_hooks(watches: Sequence[DeviceWatch]) -> List[ContextManager[Any]]:
    return [hook for watch in watches for hook in watch.window_hooks()]


def reports(watches: Sequence[DeviceWatch]) -> Dict[str, Dict[str, Any]]:
    """Each watch's report under its key, the first one for a key kept (every watch reports:
    its report also releases what it holds)."""
    parts: Dict[str, Dict[str, Any]] = {}
    for watch in watches:
        part = watch.report()
        if part is not None:
            parts.setdefault(watch.key, part)
    return parts
