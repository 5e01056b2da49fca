"""What a generative runtime's backend module declares while edgebench cannot run it (no model
for it can be made here): a ``DEVICE_CHECK`` that refuses its cells as ``unsupported`` with the
reason before the runtime is imported, and a ``BACKEND`` that is never constructed.

Runs on the device: Python 3.8+, stdlib only.
"""

from __future__ import annotations

from typing import Callable

from ..protocol.errors import BackendError
from .generative import GenerativeBackend


def refusal(why: str) -> Callable[[], None]:
    """A ``DEVICE_CHECK`` that refuses with ``why``, one line."""

    def refuse() -> None:
        raise BackendError("unsupported", why)

    return refuse


class NotYetBackend(GenerativeBackend):
    """Marks the module generative; never constructed, since its ``DEVICE_CHECK`` refuses
    first."""
