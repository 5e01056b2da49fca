#!/usr/bin/env python3
"""Rerun the load-sensitive tests N times beside a CPU hog and count their failures.

A test that fails on a loaded machine is one CI will fail on some day. The tests marked
``load_sensitive`` (pyproject.toml's pytest markers: they start peers or processes, kill them,
or compare timings) are collected once, then each of their files runs ``--runs`` times in its
own ``python -m pytest`` (bounded by ``--timeout``, its process group killed past it). A table
follows: each test's runs, passed, failed and skipped, and for a failure the first failing
assertion line; each failure's whole assertion message is printed under its run's line as it
happens. ``--hog K`` starts K busy-loop processes beside the runs (two keep both cores
of a 2-core machine busy); they are stopped by PID at the end, on an error or on Ctrl-C.
``--suite K`` runs the whole suite K times under the hog instead and prints each summary line.
The exit status is 1 when anything failed or timed out.

Usage:
  python benchmarks/flake_hunt.py [--runs 10] [--hog 2] [--timeout 1800] [-k EXPR] [PATH ...]
  python benchmarks/flake_hunt.py --suite 2 --hog 2 [--timeout 14400]

PATH narrows the selection to the marked tests under it (a file, a folder or a node id).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from textwrap import indent

REPO = Path(__file__).resolve().parent.parent
MARKER = "load_sensitive"
#: How long a pytest process may take to exit once signalled before it is killed.
STOP_GRACE_S = 10.0
#: How much of a failure's text is printed when it happens (the table keeps its first line).
FAILURE_TEXT_CHARS = 6000
#: pytest's last line, "12 passed, 3 skipped in 40.1s" (between "=" rules without -q).
SUMMARY_LINE = re.compile(
    r"^=*\s*(\d+ (?:passed|failed|errors?|skipped|deselected)\b.* in [\d.]+s\b.*?)\s*=*$"
)


@dataclass
class Tally:
    """One test's outcomes over the runs."""

    runs: int = 0
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    first_failure: str = ""

    def add(self, outcome: str, why: str = "") -> None:
        self.runs += 1
        if outcome == "passed":
            self.passed += 1
        elif outcome == "skipped":
            self.skipped += 1
        else:
            self.failed += 1
            self.first_failure = self.first_failure or why


@dataclass
class Hunt:
    """Every test's tally, by node id, in the order first seen."""

    tallies: dict[str, Tally] = field(default_factory=dict)

    def add(self, node: str, outcome: str, why: str = "") -> None:
        self.tallies.setdefault(node, Tally()).add(outcome, why)

    @property
    def failed(self) -> int:
        return sum(t.failed for t in self.tallies.values())


# --- the CPU hog --------------------------------------------------------------------------------


@contextlib.contextmanager
def cpu_hog(processes: int) -> Iterator[list[int]]:
    """``processes`` busy loops beside the block; each stopped by its PID when it ends."""
    hogs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(processes):
            hogs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        yield [hog.pid for hog in hogs]
    finally:
        for hog in hogs:
            with contextlib.suppress(ProcessLookupError):
                os.kill(hog.pid, signal.SIGKILL)
            hog.wait(timeout=STOP_GRACE_S)


def raise_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C, so the hog and a running pytest are stopped by PID."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


# --- pytest processes ---------------------------------------------------------------------------


def run_pytest(args: list[str], timeout_s: float) -> tuple[int | None, str]:
    """``python -m pytest ARGS`` in its own session: (exit status or None past ``timeout_s``,
    its output). The whole group is stopped past the timeout or on an interrupt."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        stop_group(proc)
        return None, proc.communicate()[0]
    finally:
        if proc.poll() is None:
            stop_group(proc)


def stop_group(proc: subprocess.Popen[str]) -> None:
    """SIGTERM to the process group pytest leads, then SIGKILL if it lingers."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=STOP_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


def collect(paths: list[str], keyword: str | None) -> list[str]:
    """The node ids of the marked tests under ``paths``."""
    args = ["--collect-only", "-q", "-m", MARKER, *(["-k", keyword] if keyword else []), *paths]
    code, out = run_pytest(args, timeout_s=600)
    if code not in (0, 5):  # 5: nothing collected
        sys.exit(f"flake_hunt: collecting the {MARKER} tests failed:\n{out[-3000:]}")
    return [line.strip() for line in out.splitlines() if "::" in line]


def first_assertion_line(text: str) -> str:
    """The first ``E`` line of pytest's failure text (the failing assertion), else its first."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("E "):
            return line[1:].strip()
    return lines[0] if lines else "(no output)"


def junit_key(node: str) -> tuple[str, str]:
    """The (classname, name) pair a junit XML report gives the test ``node``."""
    path, *parts = node.split("::")
    module = path.removesuffix(".py").replace("/", ".")
    return ".".join([module, *parts[:-1]]), parts[-1]


def failure_text(text: str) -> str:
    """The ``E`` lines of pytest's failure text (the assertion and its message, whole), so a
    rare failure's evidence (a child's exit status, its stderr) is printed the time it happens."""
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    return "\n".join(lines)[-FAILURE_TEXT_CHARS:] or text.strip()[-FAILURE_TEXT_CHARS:]


def junit_outcomes(xml_path: Path, nodes: list[str]) -> Iterator[tuple[str, str, str, str]]:
    """(node id, outcome, why, failure text) for every test case in a junit XML report."""
    by_key = {junit_key(node): node for node in nodes}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        node = by_key.get(key, "::".join(key))
        trouble = case.find("failure")
        trouble = trouble if trouble is not None else case.find("error")
        if trouble is not None:
            text = trouble.text or trouble.get("message") or ""
            yield node, "failed", first_assertion_line(text), failure_text(text)
        elif case.find("skipped") is not None:
            yield node, "skipped", "", ""
        else:
            yield node, "passed", "", ""


def hunt_file(
    path: str, nodes: list[str], hunt: Hunt, keyword: str | None, timeout_s: float, run: int
) -> None:
    """One run of the marked tests of ``path``; each outcome added to ``hunt``."""
    with tempfile.TemporaryDirectory(prefix="flake-hunt-") as scratch:
        report = Path(scratch) / "junit.xml"
        # One test process beside the hog (-n 0: no xdist workers), as a single test file runs.
        args = ["-q", "-n", "0", "-m", MARKER, f"--junitxml={report}"]
        args += ["-k", keyword] if keyword else []
        started = time.monotonic()
        code, out = run_pytest([*args, path], timeout_s)
        took = time.monotonic() - started
        if code is None or not report.exists():
            why = f"timed out after {timeout_s:g} s" if code is None else first_assertion_line(out)
            for node in nodes:
                hunt.add(node, "failed", why)
            print(f"  run {run}: {path}: {why}", flush=True)
            return
        seen, failures = 0, []
        for node, outcome, why, text in junit_outcomes(report, nodes):
            hunt.add(node, outcome, why)
            seen += 1
            if outcome == "failed":
                failures.append(f"    FAILED {node}:\n" + indent(text, "      "))
        print(f"  run {run}: {path}: {seen} tests, exit {code}, {took:.0f} s", flush=True)
        for failure in failures:
            print(failure, flush=True)


def print_table(hunt: Hunt) -> None:
    width = max([len(node) for node in hunt.tallies] + [4])
    print(f"\n{'test':{width}}  runs  passed  failed  skipped  first failure")
    for node, tally in hunt.tallies.items():
        print(
            f"{node:{width}}  {tally.runs:4}  {tally.passed:6}  {tally.failed:6}  "
            f"{tally.skipped:7}  {tally.first_failure[:160]}"
        )
    total = sum(t.runs for t in hunt.tallies.values())
    print(f"\n{len(hunt.tallies)} tests, {total} outcomes, {hunt.failed} failed")


def hunt_tests(args: argparse.Namespace) -> int:
    nodes = collect(args.paths, args.keyword)
    if not nodes:
        sys.exit(f"flake_hunt: no test marked {MARKER} under {' '.join(args.paths) or 'tests'}")
    files: dict[str, list[str]] = {}
    for node in nodes:
        files.setdefault(node.split("::", 1)[0], []).append(node)
    print(f"{len(nodes)} {MARKER} tests in {len(files)} files, {args.runs} runs each", flush=True)
    hunt = Hunt()
    for run in range(1, args.runs + 1):
        for path, in_file in files.items():
            hunt_file(path, in_file, hunt, args.keyword, args.timeout, run)
    print_table(hunt)
    return 1 if hunt.failed else 0


def hunt_suite(args: argparse.Namespace) -> int:
    failed = 0
    for run in range(1, args.suite + 1):
        started = time.monotonic()
        code, out = run_pytest(["-q", *args.paths], args.timeout)
        summary = [m.group(1) for line in out.splitlines() if (m := SUMMARY_LINE.match(line))]
        took = time.monotonic() - started
        if code is None:
            line = f"timed out after {args.timeout:g} s"
        else:
            line = summary[-1] if summary else f"exit {code}, no summary: {out[-500:]!r}"
        print(f"suite run {run}: {line} ({took:.0f} s wall)", flush=True)
        failed += code != 0
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="narrow to marked tests under these paths")
    parser.add_argument("--runs", type=int, default=10, help="runs of each file (default 10)")
    parser.add_argument("--hog", type=int, default=0, help="busy-loop processes beside the runs")
    parser.add_argument("--suite", type=int, default=0, help="run the whole suite K times instead")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression to narrow further")
    parser.add_argument(
        "--timeout", type=float, help="seconds one pytest run may take (1800; 14400 for --suite)"
    )
    args = parser.parse_args()
    if args.runs < 1 or args.hog < 0 or args.suite < 0:
        parser.error("--runs must be at least 1, --hog and --suite at least 0")
    if args.timeout is None:
        args.timeout = 14400.0 if args.suite else 1800.0
    raise_on_sigterm()
    try:
        with cpu_hog(args.hog) as pids:
            if pids:
                print(f"CPU hog: {len(pids)} busy loops, PIDs {', '.join(map(str, pids))}")
            return hunt_suite(args) if args.suite else hunt_tests(args)
    except KeyboardInterrupt:
        print("flake_hunt: interrupted; the hog and the running tests are stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
