"""What a framework folder's ``build.py`` declares for edgebench-native (``Framework.build``):
how its static library is built from its source, and what the runner needs from it.

This module and ``cmake_flags`` are the leaves of ``edgebench.builds`` a recipe imports, so the
folders can be listed while ``sources`` and ``libraries`` are still being imported.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edgebench.builds.sources import Source
    from edgebench.builds.targets import Target

#: A version a source tree does not state.
UNKNOWN = "unknown"


@dataclass(frozen=True)
class LibraryRecipe:
    include: str  # the include folder the runner needs, under install/
    lib: str  # the static library, under install/
    whole_archive: bool  # link every object (MNN and TNN register their ops by static initialisers)
    core_minutes: tuple[int, int]  # a build's rough cost in CPU-core minutes, for the estimate
    #: The project() name its top CMakeLists.txt declares; its archives' names start with it.
    project: str
    #: Where its source comes from (the message when none is found names it).
    page: str
    #: The framework's version as its source tree states it (UNKNOWN where it does not).
    read_version: Callable[[Path], str]
    #: Its own CMake options for (source, target, lean, gpu_devices): static, no tools, tests
    #: or Python; the GPU APIs of gpu_builds.GPU_APIS; with ``lean``, only the instruction
    #: sets of the usual devices (libraries.CPU_FEATURES); ``gpu_devices`` as GPU_DEVICES says.
    cmake_flags: Callable[[Source, Target, bool, str], list[str]]
    #: The CMake target to build when the framework has no install rule (TNN): its library and
    #: the source's include/ are then copied into install/ by hand.
    target_without_install: str | None = None
    #: Macros the runner must see as the library was built with (they change its headers).
    runner_defines: tuple[str, ...] = ()
    #: Folders of the framework's source tree the runner also includes: TNN declares the
    #: LayerInfo its ForwardWithCallback hands out (layer name and type) only under source/.
    source_includes: tuple[str, ...] = ()
    #: Its archives name a commit, not a version (``TNN-f0cb081-src``): the version read from
    #: the tree (which TNN has not moved since 2021) then takes ``+<commit>``.
    archives_name_commits: bool = False
    #: The line a missing source gets when the usual one is not enough (ncnn: the command that
    #: fetches its sdist); called when needed.
    missing_source: Callable[[], str] | None = None
    #: Where its source archive is when it is not named ``<framework>-<version>`` (llama.cpp's
    #: comes in llama-cpp-python's sdist): the file, or None when it is not there.
    find_archive: Callable[[], Path | None] | None = None
    #: The folder under the archive's top holding the framework's own top CMakeLists.txt
    #: (llama.cpp: ``vendor/llama.cpp``), used where it is there.
    source_subfolder: str = ""
    #: The framework whose library (and source) this one links instead of a build of its own
    #: (mnn-llm: MNN's, which holds its LLM engine): only the runner's backend file differs.
    library_of: str = ""
    #: The runner's C++ files for this framework, under runners/native_runner/backends/: its
    #: backend first, then that backend's parts. Every file there is one framework's.
    runner_backend: tuple[str, ...] = ()


@functools.cache
def library_recipes() -> dict[str, LibraryRecipe]:
    """Framework name -> its recipe, for every framework folder that declares ``build``."""
    from edgebench.frameworks import FRAMEWORKS, load_target

    found: dict[str, LibraryRecipe] = {}
    for framework in FRAMEWORKS:
        if framework.build is None:
            continue
        recipe = load_target(framework.build)
        if not isinstance(recipe, LibraryRecipe):
            raise TypeError(f"{framework.name}'s build {framework.build} is not a LibraryRecipe")
        found[framework.name] = recipe
    return found
