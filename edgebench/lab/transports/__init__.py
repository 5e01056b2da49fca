"""How the host reaches a device: one interface (``base.Transport``), one module per transport.

Each module in ``TRANSPORT_MODULES`` declares its ``KIND`` (``base.TransportKind``): the lab
keys it takes, how to read them, how to show its address and how to open it. Adding a
transport is adding its module and its name here.
"""

from __future__ import annotations

import functools
import importlib

from edgebench.lab.transports.base import CommandResult, Transport, TransportKind
from edgebench.lab.transports.local import LocalTransport

#: The transports a lab entry may name, by module name in this package.
TRANSPORT_MODULES = ("adb", "ssh", "local")


@functools.cache
def transport_kinds() -> dict[str, TransportKind]:
    """Every transport, by name (each module imported on first use)."""
    kinds = {}
    for module in TRANSPORT_MODULES:
        kind = importlib.import_module(f"{__name__}.{module}").KIND
        kinds[kind.name] = kind
    return kinds


__all__ = [
    "TRANSPORT_MODULES",
    "CommandResult",
    "LocalTransport",
    "Transport",
    "TransportKind",
    "transport_kinds",
]
