"""edgebench.process_group: children in their own group, stopped with every descendant (also
those that left the group), TERM before KILL, nothing left behind when edgebench exits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from edgebench import process_group

pytestmark = [
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc"),
    pytest.mark.load_sensitive,
]

#: Starts two descendants and blocks: one in its own group (the default), one that left it
#: with setsid; prints "<same group pid> <own session pid>" once both run.
FAMILY = textwrap.dedent(
    """
    import subprocess, sys
    same = subprocess.Popen(["tail", "-f", "/dev/null"])
    apart = subprocess.Popen(["tail", "-f", "/dev/null"], start_new_session=True)
    print(same.pid, apart.pid, flush=True)
    sys.stdin.read()
    """
)


def alive(pid: int) -> bool:
    """Running (a zombie has ended: no init reaps orphans in every container)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rfind(")") + 2] not in "ZX"


def wait_until(condition, what: str, limit_s: float = 20.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def kill_if_alive(*pids: int) -> None:
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_child_leads_its_own_process_group():
    script = "import os; print(os.getpgid(0), os.getsid(0))"
    with process_group.child(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True
    ) as proc:
        out, _ = proc.communicate(timeout=30)
    pgid, sid = map(int, out.split())
    assert pgid == sid == proc.pid
    assert pgid != os.getpgid(0)
    assert proc not in process_group.running()


def test_stop_ends_the_child_and_every_descendant_even_outside_its_group():
    proc = process_group.start(
        [sys.executable, "-c", FAMILY], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    same, apart = map(int, proc.stdout.readline().split())
    try:
        assert os.getpgid(apart) != proc.pid  # it did leave the group
        process_group.stop(proc, grace=5)
        assert proc.returncode == -signal.SIGTERM
        wait_until(lambda: not alive(same) and not alive(apart), "the descendants to end")
        assert proc not in process_group.running()
    finally:
        kill_if_alive(same, apart)
        proc.stdin.close()
        proc.stdout.close()


def test_a_child_that_ignores_sigterm_gets_sigkill_after_the_grace(tmp_path):
    script = textwrap.dedent(
        """
        import signal, sys
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ready", flush=True)
        sys.stdin.read()
        """
    )
    proc = process_group.start(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "ready"
    started = time.monotonic()
    process_group.stop(proc, grace=0.5)
    assert proc.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 10
    proc.stdin.close()
    proc.stdout.close()


def test_sigterm_comes_first_so_a_child_can_clean_up(tmp_path):
    done = tmp_path / "cleaned"
    script = textwrap.dedent(
        f"""
        import signal, sys
        def bye(*_):
            open({str(done)!r}, "w").write("term")
            sys.exit(3)
        signal.signal(signal.SIGTERM, bye)
        print("ready", flush=True)
        sys.stdin.read()
        """
    )
    proc = process_group.start(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "ready"
    process_group.stop(proc, grace=30)
    assert proc.returncode == 3
    assert done.read_text() == "term"
    proc.stdin.close()
    proc.stdout.close()


def test_leaving_a_child_block_by_an_exception_stops_the_tree():
    with (
        pytest.raises(KeyboardInterrupt),
        process_group.child(
            [sys.executable, "-c", FAMILY],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        ) as proc,
    ):
        same, apart = map(int, proc.stdout.readline().split())
        raise KeyboardInterrupt
    try:
        assert proc.returncode is not None
        wait_until(lambda: not alive(same) and not alive(apart), "the descendants to end")
    finally:
        kill_if_alive(same, apart)
        proc.stdin.close()
        proc.stdout.close()


def test_run_timeout_stops_the_whole_tree():
    script = "tail -f /dev/null & echo $!; wait"
    with pytest.raises(subprocess.TimeoutExpired) as caught:
        process_group.run(["sh", "-c", script], capture_output=True, text=True, timeout=1)
    grandchild = int(caught.value.stdout.split()[0])
    try:
        wait_until(lambda: not alive(grandchild), "the shell's background job to end")
    finally:
        kill_if_alive(grandchild)
    assert process_group.running() == []


def test_run_returns_what_subprocess_run_returns():
    done = process_group.run(
        [sys.executable, "-c", "import sys; print(sys.stdin.read().upper()); sys.exit(4)"],
        input="abc",
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stdout.strip()) == (4, "ABC")
    with pytest.raises(subprocess.CalledProcessError):
        process_group.run([sys.executable, "-c", "raise SystemExit(1)"], check=True)


class _Interrupted(Exception):
    pass


def test_a_signal_while_a_child_starts_waits_until_the_child_is_recorded(monkeypatch):
    """SIGTERM landing between fork and the record: delivered afterwards, and the child it
    would have orphaned is stopped."""
    real_popen = subprocess.Popen
    seen: dict[str, object] = {}

    def popen_then_signal(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        seen["proc"] = proc
        os.kill(os.getpid(), signal.SIGTERM)  # arrives here, inside start()
        seen["running_after_kill"] = True  # the handler did not run yet
        return proc

    def on_term(signum, frame):
        seen["recorded"] = seen["proc"] in process_group.running()
        raise _Interrupted

    previous = signal.signal(signal.SIGTERM, on_term)
    monkeypatch.setattr(process_group.subprocess, "Popen", popen_then_signal)
    try:
        with pytest.raises(_Interrupted):
            process_group.start(["tail", "-f", "/dev/null"])
        assert signal.getsignal(signal.SIGTERM) is on_term
    finally:
        signal.signal(signal.SIGTERM, previous)
    proc = seen["proc"]
    assert seen["running_after_kill"] is True and seen["recorded"] is True
    assert proc.returncode == -signal.SIGTERM
    assert proc not in process_group.running()


def _python(script: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def test_children_end_when_the_program_exits_normally():
    proc = _python(
        """
        import subprocess, sys
        from edgebench import process_group
        child = process_group.start(["tail", "-f", "/dev/null"])
        print(child.pid, flush=True)
        sys.exit(0)
        """
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    pid = int(out.split()[0])
    try:
        wait_until(lambda: not alive(pid), "the child to end")
    finally:
        kill_if_alive(pid)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_unwinds_like_ctrl_c_and_nothing_starts_afterwards(sig):
    proc = _python(
        """
        import sys
        from edgebench import process_group
        process_group.raise_on_terminate()
        try:
            with process_group.child(["tail", "-f", "/dev/null"]) as child:
                print(child.pid, flush=True)
                child.wait()
        except process_group.Terminated as exc:
            print("unwound", exc.signum, child.returncode, flush=True)
        process_group.shutdown()
        try:
            process_group.start(["true"])
        except process_group.ShuttingDown:
            print("refused", flush=True)
        """
    )
    pid = int(proc.stdout.readline())
    try:
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        kill_if_alive(pid)
    assert proc.returncode == 0, err
    assert out.split() == ["unwound", str(int(sig)), str(-signal.SIGTERM), "refused"]
    assert not alive(pid)
