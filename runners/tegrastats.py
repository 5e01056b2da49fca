"""``tegrastats`` as an energy source: the Jetson's own monitor, run as a child process for the
cell (``tegrastats --interval <ms>``), its lines parsed as they come: the power rails and the
GPU's load and clock (GR3D_FREQ).

Rails, as the JetPack versions print them: ``VDD_IN 4763mW/4763mW`` (instant/average, JetPack 5
and 6), ``VDD_IN 5765mW`` (instant only), ``VDD_IN 5336/4970`` (JetPack 4, mW without units)
and ``VDD_IN 4 mW/4 mW`` spelled with spaces. Orin NX and Nano: VDD_IN (the module's input),
VDD_CPU_GPU_CV, VDD_SOC; AGX Orin: VDD_GPU_SOC, VDD_CPU_CV, VIN_SYS_5V0 (and VDDQ_VDD2_1V8AO).
GR3D_FREQ: ``61%`` (JetPack 6), ``0%@[305,305]`` (per GPC, MHz), ``3%@76`` (older).

The total is the VDD_IN / POM_5V_IN rail where printed, else the sum of the rails (describe()
says which). The child is stopped by its PID (terminate, then kill) on ``close()``.

Runs on the device: Python 3.8+, standard library only, imports nothing from the host package.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from .energy_source import EnergySource, Reading, TelemetryUnavailable

INTERVAL_MS = 100
FIRST_LINE_TIMEOUT_S = 5.0
STOP_TIMEOUT_S = 3.0
TOTAL_RAILS = ("VDD_IN", "POM_5V_IN")
#: Lines kept for describe(): the rails and GPU of the last one are what read() gives.
MAX_LINES = 1_000_000

_RAIL = re.compile(
    r"\b((?:VDD|VIN|POM|VDDQ)_[A-Z0-9_]+)\s+(\d+)\s*(?:mW)?(?:\s*/\s*(\d+)\s*(?:mW)?)?(?=\s|$)"
)
_GR3D = re.compile(r"\bGR3D(?:_FREQ)?\s+(\d+)%(?:@\[?([\d,]+)\]?)?")


def parse_line(line: str) -> Dict[str, Any]:
    """One tegrastats line: ``rails`` {name: (instant mW, average mW or None)}, the GPU's
    ``gpu_load_pct`` and ``gpu_freq_mhz`` (the highest GPC's, None where not printed)."""
    rails: Dict[str, Tuple[int, Optional[int]]] = {}
    for name, now, average in _RAIL.findall(line):
        rails[name] = (int(now), int(average) if average else None)
    gpu = _GR3D.search(line)
    freqs = [int(f) for f in gpu.group(2).split(",") if f] if gpu and gpu.group(2) else []
    return {
        "rails": rails,
        "gpu_load_pct": float(gpu.group(1)) if gpu else None,
        "gpu_freq_mhz": max(freqs) if freqs else None,
    }


def total_mw(rails: Dict[str, Tuple[int, Optional[int]]]) -> Tuple[Optional[int], str]:
    """The input rail's instant power, else the sum of the rails; and which it was."""
    for name in TOTAL_RAILS:
        if name in rails:
            return rails[name][0], "rail %s" % name
    if not rails:
        return None, "no rails"
    return sum(now for now, _ in rails.values()), "sum of rails %s" % ", ".join(rails)


class Tegrastats(EnergySource):
    """The running ``tegrastats`` child and the last line it printed."""

    kind = "tegrastats"

    def __init__(self, interval_ms: int = INTERVAL_MS) -> None:
        path = shutil.which("tegrastats")
        if path is None:
            raise TelemetryUnavailable("tegrastats: not found on PATH (not a Jetson)")
        self.interval_ms = interval_ms
        self.argv = [path, "--interval", str(interval_ms)]
        self.lines = 0
        self.last: Optional[Dict[str, Any]] = None
        self.last_ns = 0
        self._lock = threading.Lock()
        self._first = threading.Event()
        try:
            self.child: Optional[subprocess.Popen] = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError as exc:
            raise TelemetryUnavailable("tegrastats: could not start %s: %s" % (path, exc)) from exc
        self._reader = threading.Thread(target=self._read_lines, daemon=True)
        self._reader.start()
        if not self._first.wait(FIRST_LINE_TIMEOUT_S) or not self._has_power():
            self.close()
            raise TelemetryUnavailable(
                "tegrastats: no line with a power rail within %.0f s" % FIRST_LINE_TIMEOUT_S
            )

    def _has_power(self) -> bool:
        with self._lock:
            return self.last is not None and total_mw(self.last["rails"])[0] is not None

    def _read_lines(self) -> None:
        assert self.child is not None and self.child.stdout is not None
        for raw in self.child.stdout:  # ends when the child exits and its pipe closes
            parsed = parse_line(raw.decode(errors="replace"))
            with self._lock:
                self.lines += 1
                if parsed["rails"] or parsed["gpu_load_pct"] is not None:
                    self.last, self.last_ns = parsed, time.monotonic_ns()
            self._first.set()
            if self.lines >= MAX_LINES:
                break
        self._first.set()

    def read(self) -> Reading:
        with self._lock:
            last, at = self.last, self.last_ns
        if last is None:
            raise TelemetryUnavailable("tegrastats: no line yet")
        milliwatts, _ = total_mw(last["rails"])
        power = milliwatts / 1000.0 if milliwatts is not None else None
        return Reading(at, power, None, None, False)

    def gpu(self) -> Dict[str, Optional[float]]:
        """The GPU's load and clock on the last line."""
        with self._lock:
            last = self.last or {}
        return {"load_pct": last.get("gpu_load_pct"), "freq_mhz": last.get("gpu_freq_mhz")}

    def close(self) -> None:
        """Stop the child by its PID: terminate, wait, kill if it lingers."""
        child, self.child = self.child, None
        if child is None:
            return
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(STOP_TIMEOUT_S)
        if child.stdout is not None:
            child.stdout.close()
        self._reader.join(STOP_TIMEOUT_S)

    def describe(self) -> Dict[str, Any]:
        with self._lock:
            rails: List[str] = list((self.last or {}).get("rails") or {})
            _, total = total_mw((self.last or {}).get("rails") or {})
        return {
            "kind": self.kind,
            "command": " ".join(self.argv),
            "interval_ms": self.interval_ms,
            "rails": rails,
            "total": total,
            "units": "mW",
        }
