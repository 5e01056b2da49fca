"""Child processes that end with edgebench.

Every program edgebench runs on this machine (the converters, pip, cmake and the compiler,
mmdebstrap and dpkg under qemu, runners on the local device, the ONNX Runtime reference)
starts through :func:`child` or :func:`run`: in its own process group, and recorded until it
ends. Stopping one sends SIGTERM to its group and to every descendant that left the group,
then SIGKILL to whatever is left after a bounded grace, so a tool that ignores TERM (dpkg
under qemu, running as root) still goes.

:func:`shutdown` stops every child still running; ``edgebench.cli.app.main`` calls it however
the command ends, and :func:`raise_on_terminate` turns SIGTERM and SIGHUP into
:class:`Terminated` (a ``KeyboardInterrupt``), so that a terminated edgebench unwinds through
the same ``finally`` blocks as Ctrl-C.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: Seconds a child has between SIGTERM and SIGKILL.
GRACE_S = 5.0
#: Seconds to wait for a killed child to be gone before saying it could not be stopped.
KILL_WAIT_S = 10.0
#: The signals that end edgebench; a child is never started half-way through one of them.
ENDING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
_PROC = Path("/proc")
_POLL_S = 0.02


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread as Ctrl-C is, so that whatever runs there
    unwinds (children stopped, half-built folders removed) before edgebench exits."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class ShuttingDown(RuntimeError):
    """A child was to start after edgebench began to stop its children."""


@dataclass(frozen=True)
class _Process:
    pid: int
    ppid: int
    pgid: int
    start: int  # clock ticks after boot: tells a process from a later one with its pid
    zombie: bool


_lock = threading.Lock()
_children: dict[int, subprocess.Popen] = {}
_closing = False
_terminating = False


# --- starting -----------------------------------------------------------------------------------


def start(argv: Sequence[str], **popen_kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen(argv)`` in a new session (its own process group), recorded until
    :func:`stop` or the end of :func:`child`. Prefer :func:`child`, which stops it for you."""
    popen_kwargs.pop("start_new_session", None)
    proc: subprocess.Popen | None = None
    try:
        with _signals_deferred(), _lock:
            if _closing:
                raise ShuttingDown(f"edgebench is stopping; not starting {Path(argv[0]).name}")
            proc = subprocess.Popen(list(argv), start_new_session=True, **popen_kwargs)
            _children[proc.pid] = proc
    except BaseException:
        # A signal held back while it started ends edgebench: the new child goes with it.
        if proc is not None:
            stop(proc)
        raise
    return proc


@contextlib.contextmanager
def child(
    argv: Sequence[str], grace: float = GRACE_S, **popen_kwargs: Any
) -> Iterator[subprocess.Popen]:
    """A started child for the block; stopped (with its descendants) if the block leaves while
    it still runs, by an exception, Ctrl-C or :class:`Terminated` included."""
    proc = start(argv, **popen_kwargs)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            stop(proc, grace)
        else:
            _forget(proc)


def run(
    argv: Sequence[str],
    *,
    input: str | bytes | None = None,
    timeout: float | None = None,
    capture_output: bool = False,
    check: bool = False,
    grace: float = GRACE_S,
    **popen_kwargs: Any,
) -> subprocess.CompletedProcess:
    """``subprocess.run`` through :func:`child`: on a timeout (``TimeoutExpired`` as there)
    or an interruption the whole process tree is stopped, not only the direct child."""
    if capture_output:
        popen_kwargs.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if input is not None:
        popen_kwargs["stdin"] = subprocess.PIPE
    with child(argv, grace, **popen_kwargs) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(proc, grace)
            out, err = proc.communicate()
            raise subprocess.TimeoutExpired(proc.args, timeout or 0.0, out, err) from None
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold back Ctrl-C, SIGTERM and SIGHUP while a child is started and recorded, then
    deliver them: raised between ``fork`` and the record, their exception would leave a child
    nobody knows of. Only the main thread runs Python signal handlers, so only it defers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous: dict[int, Any] = {}
    for sig in ENDING_SIGNALS:
        handler = signal.getsignal(sig)
        if handler is None or handler is signal.SIG_IGN:
            continue  # not installed from Python (cannot be restored) or ignored anyway
        previous[sig] = signal.signal(sig, lambda signum, _frame: pending.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for signum in dict.fromkeys(pending):
            signal.raise_signal(signum)


# --- stopping -----------------------------------------------------------------------------------


def stop(proc: subprocess.Popen, grace: float = GRACE_S) -> int | None:
    """Stop ``proc``, its process group and its descendants: SIGTERM, then SIGKILL after
    ``grace`` seconds. Returns its exit status (None if it could not be stopped)."""
    stop_many([proc], grace)
    return proc.returncode


def stop_many(procs: Sequence[subprocess.Popen], grace: float = GRACE_S) -> None:
    """:func:`stop` for several children at once: one grace period for all of them."""
    if not procs:
        return
    table = _process_table()
    targets = {proc.pid: _tree(proc, table) for proc in procs}
    for proc in procs:
        _signal_tree(proc, targets[proc.pid], signal.SIGTERM)
    deadline = time.monotonic() + max(0.0, grace)
    _wait_gone(procs, targets, deadline)
    table = _process_table()
    for proc in procs:
        targets[proc.pid] |= _tree(proc, table, also=targets[proc.pid])
        if _remaining(proc, targets[proc.pid]):
            _signal_tree(proc, targets[proc.pid], signal.SIGKILL)
    _wait_gone(procs, targets, time.monotonic() + KILL_WAIT_S)
    for proc in procs:
        left = _remaining(proc, targets[proc.pid])
        if left:
            log.warning(
                "could not stop process %s (%s)", ", ".join(map(str, sorted(left))), proc.args
            )
        else:
            _forget(proc)


def shutdown(grace: float = GRACE_S) -> None:
    """Stop every child still running, and start none from now on: edgebench is exiting.
    Ctrl-C, SIGTERM and SIGHUP are ignored from here, so they cannot cut this short."""
    global _closing
    if threading.current_thread() is threading.main_thread():
        for sig in ENDING_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
    with _lock:
        _closing = True
        running = list(_children.values())
    stop_many(running, grace)


def running() -> list[subprocess.Popen]:
    """The children started here that have not been stopped or seen ending."""
    with _lock:
        return list(_children.values())


def raise_on_terminate() -> None:
    """From now on SIGTERM and SIGHUP raise :class:`Terminated` in the main thread (once: a
    repeated signal must not cut short the cleanup the first one started)."""

    def on_terminate(signum: int, _frame: object) -> None:
        global _terminating
        if _terminating:
            return
        _terminating = True
        raise Terminated(signum)

    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), on_terminate)


def _forget(proc: subprocess.Popen) -> None:
    with _lock:
        if _children.get(proc.pid) is proc:
            del _children[proc.pid]


def _tree(
    proc: subprocess.Popen,
    table: dict[int, _Process],
    also: Set[tuple[int, int]] = frozenset(),
) -> set[tuple[int, int]]:
    """(pid, start) of every live descendant of ``proc`` and of the processes in ``also``,
    plus the members of its process group: those that left the group (setsid, an unshare
    --fork) are found by parentage, those whose parent died by their group."""
    children: dict[int, list[_Process]] = {}
    for entry in table.values():
        children.setdefault(entry.ppid, []).append(entry)
    # A reaped leader's pid may belong to another process by now: only a live one is a root.
    todo = [proc.pid] if proc.poll() is None else []
    todo += [pid for pid, start in also if _same(table, pid, start)]
    found: set[tuple[int, int]] = set()
    while todo:
        for entry in children.get(todo.pop(), []):
            key = (entry.pid, entry.start)
            if key not in found:
                found.add(key)
                todo.append(entry.pid)
    if _group_is_ours(proc):
        found |= {(e.pid, e.start) for e in table.values() if e.pgid == proc.pid}
    leader = table.get(proc.pid)
    if leader is not None:
        found.discard((leader.pid, leader.start))  # the leader is signalled through Popen
    return found


def _signal_tree(proc: subprocess.Popen, tree: set[tuple[int, int]], sig: int) -> None:
    """``sig`` once to each process: the group at once, then the descendants outside it (a
    second SIGTERM could cut short the cleanup the first one started)."""
    group = None
    if _group_is_ours(proc):
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, sig)
            group = proc.pid
    if group is None and proc.poll() is None:
        with contextlib.suppress(OSError):
            proc.send_signal(sig)
    table = _process_table()
    for pid, started in tree:
        if _same(table, pid, started) and table[pid].pgid != group:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)


def _group_is_ours(proc: subprocess.Popen) -> bool:
    """Whether the group ``proc`` led can still be signalled without hitting another: the
    kernel keeps a pid from reuse while a group of that id has members, so the group is ours
    while its leader runs or no process holds the leader's pid."""
    if proc.poll() is None:
        return True
    if not _PROC.is_dir():
        return False
    return not (_PROC / str(proc.pid)).exists() or _read_stat(proc.pid) is None


def _remaining(proc: subprocess.Popen, tree: set[tuple[int, int]]) -> set[int]:
    left = set() if proc.poll() is not None else {proc.pid}
    table = _process_table()
    left |= {pid for pid, started in tree if _same(table, pid, started, live=True)}
    if _group_is_ours(proc):
        left |= {e.pid for e in table.values() if e.pgid == proc.pid and not e.zombie}
    return left


def _wait_gone(
    procs: Sequence[subprocess.Popen], trees: dict[int, set[tuple[int, int]]], deadline: float
) -> None:
    """Until every child and its tree are gone, or the deadline (children are reaped here)."""
    while True:
        if not any(_remaining(proc, trees[proc.pid]) for proc in procs):
            return
        left = deadline - time.monotonic()
        if left <= 0:
            return
        waiting = [proc for proc in procs if proc.poll() is None]
        if waiting:
            with contextlib.suppress(subprocess.TimeoutExpired):
                waiting[0].wait(timeout=min(left, _POLL_S))
        else:
            time.sleep(min(left, _POLL_S))


# --- /proc ----------------------------------------------------------------------------------


def _read_stat(pid: int) -> _Process | None:
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name in parentheses may hold spaces and parentheses: split after the last.
    fields = text[text.rfind(")") + 2 :].split()
    try:
        state, ppid, pgid = fields[0], int(fields[1]), int(fields[2])
        started = int(fields[19])
    except (IndexError, ValueError):
        return None
    return _Process(pid, ppid, pgid, started, state in ("Z", "X"))


def _process_table() -> dict[int, _Process]:
    """Every process this user can see, by pid; empty where there is no /proc."""
    try:
        names = os.listdir(_PROC)
    except OSError:
        return {}
    table = {}
    for name in names:
        if name.isdigit():
            entry = _read_stat(int(name))
            if entry is not None:
                table[entry.pid] = entry
    return table


def _same(table: dict[int, _Process], pid: int, started: int, live: bool = False) -> bool:
    entry = table.get(pid)
    return entry is not None and entry.start == started and not (live and entry.zombie)


atexit.register(shutdown)
