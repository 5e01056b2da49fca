"""A lock on the device itself, so runs from different hosts never measure on one device at once.

The host-side flock (locks.py) only stops two runs on the same host. Here the lock is a folder
``.edgebench-lock`` beside the device's work dir: ``mkdir`` is atomic on every POSIX filesystem
and every device shell has it. Its ``owner`` file says who holds it and until when:

    token=<hex> expires=<device epoch s> boot=<boot id> host=<name> pid=<n> run=<run id>

The holder renews the lease before each cell. A lock is stale, and is broken, when its lease
has expired (on the device's clock), when the device rebooted since (boot id), or when it was
taken from this host by a process that is gone. Nothing waits forever: the wait is bounded.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from edgebench.errors import UserError
from edgebench.lab.transports.base import Transport, TransportError, quote_argv

log = logging.getLogger(__name__)

LOCK_NAME = ".edgebench-lock"
#: A lock folder whose owner file is still missing this long after it appeared is abandoned.
UNWRITTEN_OWNER_S = 60
POLL_S = 2.0
COMMAND_TIMEOUT_S = 30.0

#: Shell prologue: the device's clock and boot id, which leases and staleness are judged by.
_DEVICE_STATE = "now=$(date +%s); boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null); "

_SAFE = re.compile(r"[^A-Za-z0-9_.:-]+")


def _safe(text: str) -> str:
    return _SAFE.sub("_", text)[:80] or "-"


class LockUnavailable(Exception):
    """The device has no place for its lock (the message says where and the fix)."""


@dataclass(frozen=True)
class LockOwner:
    token: str
    expires: int
    boot: str
    host: str
    pid: int
    run: str

    @classmethod
    def parse(cls, text: str) -> LockOwner | None:
        fields = dict(part.partition("=")[::2] for part in text.split())
        try:
            return cls(
                token=fields["token"],
                expires=int(fields["expires"]),
                boot=fields.get("boot", ""),
                host=fields.get("host", "?"),
                pid=int(fields.get("pid", "0")),
                run=fields.get("run", "?"),
            )
        except (KeyError, ValueError):
            return None

    def describe(self, now: int) -> str:
        left = max(0, self.expires - now)
        return f"run {self.run} from host {self.host}, pid {self.pid}; lease ends in {left} s"


@dataclass(frozen=True)
class LockState:
    """What the device said when the lock was not free."""

    now: int
    boot: str
    age_s: int | None  # of the lock folder
    owner_text: str

    @property
    def owner(self) -> LockOwner | None:
        return LockOwner.parse(self.owner_text)


class DeviceLockFile:
    def __init__(
        self,
        device_name: str,
        transport: Transport,
        work_dir: str,
        lease_s: float,
        run_id: str,
        renew_margin_s: float = 300.0,
    ) -> None:
        """``lease_s`` must exceed the longest cell by ``renew_margin_s``."""
        self.device_name = device_name
        self.transport = transport
        self.path = posixpath.join(posixpath.dirname(work_dir.rstrip("/")) or "/", LOCK_NAME)
        self.lease_s = int(lease_s)
        self.token = uuid.uuid4().hex
        self.host = _safe(socket.gethostname())
        self.run_id = _safe(run_id)
        self.held = False
        self.renew_margin_s = renew_margin_s
        self._renewed_at = float("-inf")
        self._lock_q = quote_argv([self.path])
        self._owner_q = quote_argv([posixpath.join(self.path, "owner")])

    # --- device commands ------------------------------------------------------------------

    def _owner_printf(self) -> str:
        """A shell command writing our owner line to stdout, the expiry computed on the device."""
        line = (
            f"token={self.token} expires=%s boot=%s host={self.host} pid={os.getpid()} "
            f"run={self.run_id}"
        )
        return f'printf {quote_argv([line + chr(10)])} "$((now + {self.lease_s}))" "$boot"'

    def _shell(self, script: str) -> str:
        result = self.transport.shell(script, timeout=COMMAND_TIMEOUT_S)
        return result.stdout

    def _try_once(self) -> LockState | None:
        """Take the lock if it is free: None when taken, else what holds it."""
        lock, owner = self._lock_q, self._owner_q
        out = self._shell(
            f"{_DEVICE_STATE}if mkdir {lock} 2>/dev/null; then {self._owner_printf()} > {owner} "
            f"&& echo EDGEBENCH-LOCK-TAKEN; "
            f"elif [ -d {lock} ]; then "
            f'echo "EDGEBENCH-LOCK-BUSY $now $boot $(stat -c %Y {lock} 2>/dev/null)"; '
            f"cat {owner} 2>/dev/null; "
            f"else echo EDGEBENCH-LOCK-FAILED; fi"
        )
        lines = out.splitlines()
        if "EDGEBENCH-LOCK-TAKEN" in lines:
            return None
        busy = next((i for i, x in enumerate(lines) if x.startswith("EDGEBENCH-LOCK-BUSY")), None)
        if busy is None:
            raise LockUnavailable(
                f"could not create its lock folder {self.path}; make the folder above the "
                "work dir writable, or set work_dir in the lab"
            )
        parts = lines[busy].split()
        now = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        boot = parts[2] if len(parts) > 2 else ""
        mtime = int(parts[3]) if len(parts) > 3 and parts[3].isdigit() else None
        return LockState(
            now=now,
            boot=boot,
            age_s=now - mtime if mtime is not None and now else None,
            owner_text="\n".join(lines[busy + 1 :]).strip(),
        )

    def _break(self, state: LockState) -> None:
        """Remove a stale lock, unless its owner line changed since we read it."""
        lock, owner = self._lock_q, self._owner_q
        seen = quote_argv([state.owner_text])
        self._shell(f'if [ "$(cat {owner} 2>/dev/null)" = {seen} ]; then rm -rf {lock}; fi')

    def stale_reason(self, state: LockState) -> str | None:
        owner = state.owner
        if owner is None:
            if state.age_s is not None and state.age_s > UNWRITTEN_OWNER_S:
                return f"its owner file is missing or unreadable after {state.age_s} s"
            return None
        if state.boot and owner.boot and state.boot != owner.boot:
            return "the device rebooted since it was taken"
        if state.now and state.now > owner.expires:
            return f"its lease ended {state.now - owner.expires} s ago"
        if owner.host == self.host and owner.pid != os.getpid() and not _pid_alive(owner.pid):
            return f"the edgebench process that took it (pid {owner.pid}) is gone"
        return None

    # --- the lock's life --------------------------------------------------------------------

    def acquire(self, *, wait: bool, report: Callable[[str], None], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        reported = False
        while True:
            state = self._try_once()
            if state is None:
                self.held = True
                self._renewed_at = time.monotonic()
                return
            reason = self.stale_reason(state)
            if reason is not None:
                report(f"device {self.device_name}: breaking a stale lock ({reason})")
                self._break(state)
                continue
            holder = state.owner.describe(state.now) if state.owner else "a run that is starting"
            if not wait:
                raise UserError(
                    f"device {self.device_name} is in use ({holder}; lock {self.path}); wait "
                    "for that run or drop --no-wait"
                )
            if not reported:
                report(f"device {self.device_name} is in use ({holder}); waiting for it")
                reported = True
            if time.monotonic() > deadline:
                raise UserError(
                    f"device {self.device_name} stayed in use for {timeout_s:.0f} s ({holder})"
                )
            time.sleep(POLL_S)

    def renew(self, force: bool = False) -> str | None:
        """Extend the lease. Returns who holds the lock instead, when it is no longer ours.

        The lease outlasts the longest cell by ``renew_margin_s``, so a renewal is only sent
        when a quarter of that margin has passed since the last one (or when ``force``d):
        quick cells then cost no extra round trip, and a host that was suspended for longer
        still finds out at once that its lock may have been taken over.
        """
        if not force and time.monotonic() - self._renewed_at < self.renew_margin_s / 4:
            return None
        owner = self._owner_q
        fresh = quote_argv([posixpath.join(self.path, "owner.new")])
        out = self._shell(
            f"{_DEVICE_STATE}"
            f'case "$(cat {owner} 2>/dev/null)" in "token={self.token} "*) '
            f"{self._owner_printf()} > {fresh} && mv -f {fresh} {owner} "
            f"&& echo EDGEBENCH-LOCK-RENEWED;; "
            f"*) echo EDGEBENCH-LOCK-LOST; cat {owner} 2>/dev/null;; esac"
        )
        if "EDGEBENCH-LOCK-RENEWED" in out.splitlines():
            self._renewed_at = time.monotonic()
            return None
        self.held = False
        text = out.split("EDGEBENCH-LOCK-LOST", 1)[-1].strip()
        owner_now = LockOwner.parse(text)
        return owner_now.describe(int(time.time())) if owner_now else "nobody"

    def abandon(self) -> None:
        """The device is gone: leave the lock to its lease (or the next boot) and do not
        wait on a dead link at exit."""
        self.held = False

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        lock, owner = self._lock_q, self._owner_q
        try:
            self._shell(
                f'case "$(cat {owner} 2>/dev/null)" in "token={self.token} "*) rm -rf {lock};; esac'
            )
        except TransportError as exc:
            log.warning(
                "device %s: could not remove its lock %s (%s); the next run breaks it once the "
                "lease ends",
                self.device_name,
                self.path,
                exc,
            )


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
