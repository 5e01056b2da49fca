"""MNN's static library for edgebench-native, from an MNN source archive."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from edgebench.builds import CMAKE_HOOKS
from edgebench.builds.cmake_flags import unity_flags
from edgebench.builds.gpu_builds import ANY_OPENCL_DEVICE, gpu_apis
from edgebench.builds.recipe import UNKNOWN, LibraryRecipe
from edgebench.builds.targets import Target

if TYPE_CHECKING:
    from edgebench.builds.sources import Source


def mnn_version(root: Path) -> str:
    """``MAJOR.MINOR.PATCH`` from include/MNN/MNNDefine.h, else "unknown"."""
    header = root / "include" / "MNN" / "MNNDefine.h"
    text = header.read_text(errors="replace") if header.is_file() else ""
    parts = []
    for name in ("MAJOR", "MINOR", "PATCH"):
        found = re.search(rf"^\s*#\s*define\s+MNN_VERSION_{name}\s+(\d+)", text, re.M)
        if not found:
            break
        parts.append(found.group(1))
    if len(parts) == 3:
        return ".".join(parts)
    found = re.search(r'^\s*#\s*define\s+MNN_VERSION\s+"(\d+(?:\.\d+)*)"', text, re.M)
    return found.group(1) if found else UNKNOWN


def mnn_gpu_flags(target: Target, gpu_devices: str) -> list[str]:
    """MNN's Vulkan and OpenCL backends where GPU_APIS has them (nothing elsewhere: a CPU build's
    flags, and so its key, stay as they were), compiled into libMNN.a; each loads its API's
    library (``libvulkan.so``, ``libOpenCL.so``) with dlopen when a session asks for it. With
    ``gpu_devices`` "any", its OpenCL runtime also takes a CPU-type device; both in
    ``cmake/mnn_gpu.cmake``."""
    apis = gpu_apis("mnn", target)
    if not apis:
        return []
    flags = [f"-DMNN_{api.upper()}=ON" for api in apis]
    flags.append(f"-DCMAKE_PROJECT_MNN_INCLUDE_BEFORE={CMAKE_HOOKS / 'mnn_gpu.cmake'}")
    if "opencl" in apis and gpu_devices == "any":
        flags.append(ANY_OPENCL_DEVICE)
    return flags


#: MNN's LLM engine (transformers/llm/engine, linked into libMNN.a with the rest): one library
#: serves both the tensor cells (mnn) and the generative ones (mnn-llm), so the runner links
#: no duplicate symbols. MNN_BUILD_LLM forces MNN_LOW_MEMORY (the block-quantized int8
#: weights) and MNN_SUPPORT_TRANSFORMER_FUSE (the fused Attention op the converter's graph
#: uses); they are named here too so the flags say what the library holds. No demos, and no
#: HTTP download of models (httplib).
LLM_FLAGS = (
    "-DMNN_BUILD_LLM=ON",
    "-DMNN_LOW_MEMORY=ON",
    "-DMNN_SUPPORT_TRANSFORMER_FUSE=ON",
    "-DMNN_LLM_BUILD_DEMO=OFF",
    "-DLLM_SUPPORT_HTTP_RESOURCE=OFF",
)


def mnn_flags(source: Source, target: Target, lean: bool, gpu_devices: str) -> list[str]:
    flags = [
        "-DMNN_BUILD_SHARED_LIBS=OFF",
        "-DMNN_BUILD_TOOLS=OFF",
        "-DMNN_BUILD_DEMO=OFF",
        "-DMNN_BUILD_TEST=OFF",
        "-DMNN_BUILD_BENCHMARK=OFF",
        "-DMNN_BUILD_CONVERTER=OFF",
        "-DMNN_SEP_BUILD=OFF",
        "-DMNN_USE_THREAD_POOL=ON",
        *LLM_FLAGS,
        *unity_flags("MNN", "mnn_unity.cmake"),
        *mnn_gpu_flags(target, gpu_devices),
    ]
    if target.machine == "aarch64":
        flags.append("-DMNN_ARM82=ON")
        if lean:  # KleidiAI's kernels are off by default at run time; SME2 is Armv9.2
            flags += ["-DMNN_KLEIDIAI=OFF", "-DMNN_SME2=OFF"]
    return flags


BUILD = LibraryRecipe(
    include="include",
    lib="lib/libMNN.a",
    whole_archive=True,
    core_minutes=(6, 14),
    project="MNN",
    page="github.com/alibaba/MNN",
    read_version=mnn_version,
    cmake_flags=mnn_flags,
    runner_backend=("mnn.cpp", "mnn_gpu.cpp"),
)
