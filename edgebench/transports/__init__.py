"""How the host reaches a device: one interface, one module per transport."""

from .base import CommandResult, Transport
from .local import LocalTransport

__all__ = ["CommandResult", "LocalTransport", "Transport"]
