"""Host-side builds of edgebench's native C++ runner (``runners/native_runner/``).

One job a module: ``targets`` (what a binary runs on), ``compilers`` (which compiler builds
for a target), ``sources`` (the frameworks' source trees, from the user or the cache),
``libraries`` (each framework's static library, built once per version, target and flags),
``native_runner`` (the runner binary linked against them, and finding a built one),
``benchncnn`` (ncnn's own benchmark tool against the same library, for benchmarks/),
``llama_bench`` (llama.cpp's llama-bench from llama-cpp-python's sdist, for benchmarks/) and
``llm_bench`` (MNN's llm_bench against the runner's MNN library: mnn-llm's framework tool).

Everything lives under :func:`native_root`, ``$EDGEBENCH_NATIVE_DIR`` or
``cache_dir()/native-runner``::

    sources/<framework>-<version>.tar.gz         archives the user downloaded (ncnn's sdist)
    extracted/<archive>-<sha12>/                  those archives, extracted once
    libs/<fw>-<version>-<target>-<hash10>/        build/, install/, build.log, done.json (last)
    bin/<target>/<key>/edgebench-native           the runner, manifest.json beside it (last)
    bin/<target>/current.json                     the newest key for the target
    tools/<target>/benchncnn-<key>/benchncnn      ncnn's benchmark tool, build.log beside it
    tools/<target>/llama-bench-<key>/llama-bench  llama.cpp's, its CMake tree (build/) beside it
    tools/<target>/llm_bench-<key>/llm_bench      MNN's LLM benchmark, build.log beside it

Nothing here reaches the network: sources are given by the user or found in the cache.
"""

from __future__ import annotations

import os
from pathlib import Path

from edgebench.errors import UserError
from edgebench.paths import cache_dir

NATIVE_DIR_ENV = "EDGEBENCH_NATIVE_DIR"
#: CMake files that run inside a framework's own project() (CMAKE_PROJECT_<name>_INCLUDE).
CMAKE_HOOKS = Path(__file__).parent / "cmake"


class BuildError(UserError):
    """A native build cannot start or did not finish; the message names the cause and fix."""


def native_root() -> Path:
    """Where the native runner's sources, libraries and binaries are kept."""
    override = os.environ.get(NATIVE_DIR_ENV)
    return Path(override) if override else cache_dir() / "native-runner"
