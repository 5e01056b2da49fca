"""What a tool adapter's lifecycle hooks may do on the device a cell runs on.

The measurement method (edgebench/measure/methods/framework_tools.py) hands each adapter a
:class:`ToolSite` for its device; the hooks (``ToolAdapter.locate``, ``prepare``, ``collect``)
use only this, so an adapter needs nothing from the lab's device classes and a framework's
peculiarities (trtexec is installed on the device, keeps an engine cache and writes its samples
to a file) live in its own adapter instead of in branches of the generic method.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class ToolNotFound(Exception):
    """The tool is neither in the lab's ``tools_bin`` folder nor installed on the device; the
    message says where it was looked for and how to provide it."""


class ToolSite(Protocol):
    """One device, as a tool adapter's hooks see it."""

    @property
    def name(self) -> str:
        """The device's name in the lab (for messages)."""
        ...

    @property
    def android(self) -> bool:
        """Whether it is an Android device reached over ADB (its tools log to logcat)."""
        ...

    def shell(self, script: str, timeout: float) -> str:
        """Run ``script`` (already quoted) on the device; its standard output."""
        ...

    def path(self, *parts: str) -> str:
        """A path under edgebench's work folder on the device."""
        ...

    def read(self, path: str) -> str | None:
        """The text of a device file, or None when it is missing."""
        ...

    def has_local_binary(self, binary: str) -> bool:
        """Whether the lab's ``tools_bin`` folder for this device holds ``binary``."""
        ...

    def deploy(self, binary: str) -> str:
        """Push ``binary`` from the lab's ``tools_bin`` folder; its device path."""
        ...

    def local_sha256(self, path: Path) -> str:
        """The SHA-256 of a host file (cached while the file is unchanged)."""
        ...
