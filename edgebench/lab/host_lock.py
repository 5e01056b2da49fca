"""One edgebench run per device at a time: a host-side lock file keyed by the device."""

from __future__ import annotations

import fcntl
import os
import re
import time
from collections.abc import Callable
from typing import TextIO

from edgebench.errors import UserError
from edgebench.paths import cache_dir, is_locked

#: Lock files this process holds, and the device name each was taken for: a second flock on one
#: of them would wait for this very process.
_HELD_HERE: dict[str, str] = {}


class DeviceLock:
    """An exclusive flock on ``<cache>/locks/<device identity>.lock``, released on close.

    The kernel drops the lock when the process dies, so a crashed run never leaves a stale lock.
    """

    def __init__(self, device_name: str, identity: str) -> None:
        key = re.sub(r"[^A-Za-z0-9_.-]+", "_", identity)[:120] or "device"
        self.device_name = device_name
        self.identity = identity
        self.path = cache_dir() / "locks" / f"{key}.lock"
        self._fh: TextIO | None = None

    def _holder(self) -> str:
        try:
            return self.path.read_text().strip() or "another edgebench run"
        except OSError:
            return "another edgebench run"

    def acquire(self, *, wait: bool, report: Callable[[str], None], timeout_s: float) -> None:
        holder_here = _HELD_HERE.get(str(self.path))
        if holder_here is not None:
            raise UserError(
                f"devices {holder_here} and {self.device_name} are the same device "
                f"({self.identity}); keep one of them in --devices"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self._fh = open(self.path, "a+")  # noqa: SIM115 - held open for the whole run
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder()
            if not wait:
                self.release()
                raise UserError(
                    f"device {self.device_name} is busy ({holder}); wait for that run or "
                    "drop --no-wait"
                ) from None
            report(f"device {self.device_name} is busy ({holder}); waiting for it")
            if not self._wait(handle, timeout_s):
                self.release()
                raise UserError(
                    f"device {self.device_name} stayed busy for {timeout_s:.0f} s ({holder})"
                ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}")
        handle.flush()
        _HELD_HERE[str(self.path)] = self.device_name

    def _wait(self, handle: TextIO, timeout_s: float) -> bool:
        # Blocking flock in slices, so the wait is bounded and Ctrl-C still works.
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                time.sleep(0.2)
        return False

    def release(self) -> None:
        if self._fh is not None:
            if _HELD_HERE.get(str(self.path)) == self.device_name:
                del _HELD_HERE[str(self.path)]
            try:
                fcntl.flock(self._fh, fcntl.LOCK_UN)
            finally:
                self._fh.close()
                self._fh = None


def held_elsewhere(device_name: str, identity: str) -> bool:
    """Whether a process (a run, or a cluster actor) holds this device's lock on this host now;
    the check takes the lock for an instant and gives it back."""
    return is_locked(DeviceLock(device_name, identity).path)
