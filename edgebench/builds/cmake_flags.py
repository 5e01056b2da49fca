"""CMake options several framework recipes share: a unity build, and this host's instruction
sets (for a lean x86_64 build)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from edgebench.builds import CMAKE_HOOKS


@functools.cache
def host_cpu_flags() -> frozenset[str]:
    """The ``flags`` of /proc/cpuinfo (empty where it cannot be read)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return frozenset()
    found = re.search(r"^flags\s*:(.*)$", text, re.M)
    return frozenset(found.group(1).split()) if found else frozenset()


def unity_flags(project: str, hook: str) -> list[str]:
    """A unity build: CMake compiles 16 source files per compiler call, which cuts MNN's and
    TNN's builds about threefold; ``hook`` (in ``cmake/``) keeps out the files that clash with
    a neighbour."""
    return [
        "-DCMAKE_UNITY_BUILD=ON",
        "-DCMAKE_UNITY_BUILD_BATCH_SIZE=16",
        f"-DCMAKE_PROJECT_{project}_INCLUDE={CMAKE_HOOKS / hook}",
    ]
