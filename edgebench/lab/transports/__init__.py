"""How the host reaches a device: one interface, one module per transport."""

from edgebench.lab.transports.base import CommandResult, Transport
from edgebench.lab.transports.local import LocalTransport

__all__ = ["CommandResult", "LocalTransport", "Transport"]
