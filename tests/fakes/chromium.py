"""The real headless Chromium for the report and dashboard tests: find it (or skip naming the
install), open a page for a screenshot or its rendered DOM, read what the console said, and
tell a blank screenshot from a drawn one (a PNG decoded with zlib only)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_APT = "apt-get install -y chromium"
_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--enable-logging=stderr",
    "--v=0",
]


def chromium_or_skip() -> str:
    """The chromium executable; the test is skipped, naming the install, without one."""
    if os.access(CHROMIUM, os.X_OK):
        return str(CHROMIUM)
    found = shutil.which("chromium")
    if not found:
        pytest.skip(f"chromium not installed; in CI: {CHROMIUM_APT}")
    return found


def open_page(
    exe: str,
    page: Path,
    profile: Path,
    *,
    screenshot: Path | None = None,
    size: str = "1200,2000",
) -> subprocess.CompletedProcess:
    """Load ``page`` (a file) headless: a screenshot into ``screenshot``, else the rendered DOM
    on stdout. The console's messages are on stderr (``console_problems``)."""
    action = [f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
    return subprocess.run(
        [exe, *_FLAGS, f"--user-data-dir={profile}", f"--window-size={size}", *action,
         page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip


def console_problems(stderr: str) -> list[str]:
    """Console errors, uncaught exceptions and Content Security Policy violations."""
    return [
        line
        for line in stderr.splitlines()
        if "ERROR:CONSOLE" in line or "Uncaught" in line or "Content Security Policy" in line
    ]


def png_distinct_colours(data: bytes) -> tuple[int, int, int]:
    """(width, height, distinct colours) of an 8-bit RGB/RGBA PNG, decoded with zlib only."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    height = depth = ctype = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        chunk = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", chunk[:10])
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    assert depth == 8 and ctype in (2, 6), (depth, ctype)
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours: set[bytes] = set()
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 0xFF
            elif ftype == 2:
                line[i] = (line[i] + b) & 0xFF
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        if y % 4 == 0:  # every 4th row is plenty to count colours
            colours.update(bytes(line[i : i + 3]) for i in range(0, stride, bpp))
        prev = line
    return width, height, len(colours)
