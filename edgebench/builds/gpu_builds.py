"""What a framework's library is built with beyond the CPU: the GPU APIs of each target's build
(``GPU_APIS``), the CMake options that turn them on, which devices their runtimes take
(``GPU_DEVICES``), and the one post-build step two of them need together (TNN's OpenCL API
shims renamed, since MNN's have the same names)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from edgebench.builds import BuildError
from edgebench.builds.compilers import Compiler, ask_tool
from edgebench.builds.logged import first_error, run_logged
from edgebench.builds.targets import Target

OBJCOPY_TIMEOUT_S = 300.0


#: The accelerator APIs a framework's library is built with, per target (the CPU is always in).
#: ncnn's Vulkan costs its bundled glslang and the Vulkan layers (about twice the lean build),
#: so only the host's x86_64 build has it; a runner with any of them links glibc shared
#: (compilers.driver_link_flags).
GPU_APIS: dict[tuple[str, str], tuple[str, ...]] = {
    ("ncnn", "x86_64-linux"): ("vulkan",),
    ("mnn", "x86_64-linux"): ("vulkan", "opencl"),
    ("tnn", "x86_64-linux"): ("opencl",),
}

#: Which devices a build's GPU runtimes take: ``hardware``, the frameworks' own rule (MNN's
#: OpenCL takes GPU-type devices only), or ``any``, a build for tests on a machine without a GPU
#: whose OpenCL runtimes also take a CPU-type device (pocl); a cell on one is recorded software.
GPU_DEVICES = ("hardware", "any")
#: The flag of an ``any`` build (``cmake/mnn_gpu.cmake``), as its recorded configure shows it.
ANY_OPENCL_DEVICE = "-DEDGEBENCH_ANY_OPENCL_DEVICE=ON"


def gpu_apis(framework: str, target: Target) -> tuple[str, ...]:
    return GPU_APIS.get((framework, target.name), ())


def rename_opencl_api(library: Path, compiler: Compiler, log_path: Path) -> None:
    """Prefix the OpenCL C API functions TNN's library defines (its shims that forward to the
    ``libOpenCL.so`` it loads) and its calls to them with ``edgebench_tnn_``: MNN's library
    defines shims of the same names, and a runner links both whole. ``objcopy`` renames the
    definitions and the references alike, in every object of the archive."""
    nm, objcopy = (binutil(compiler, tool) for tool in ("nm", "objcopy"))
    listed = ask_tool([nm, "--defined-only", "-g", str(library)])
    names = sorted(
        {
            fields[2]
            for fields in map(str.split, listed.stdout.splitlines())
            if len(fields) == 3 and fields[1] == "T" and re.fullmatch(r"cl[A-Z]\w+", fields[2])
        }
    )
    if listed.returncode != 0 or not names:
        raise BuildError(f"{nm} found no OpenCL function defined in {library}")
    renames = library.with_suffix(".opencl-renames")
    renames.write_text("".join(f"{name} edgebench_tnn_{name}\n" for name in names))
    argv = [objcopy, f"--redefine-syms={renames}", str(library)]
    code, start = run_logged(argv, log_path, OBJCOPY_TIMEOUT_S)
    if code != 0:
        why = first_error(log_path, start) or f"exit {code}"
        raise BuildError(f"renaming TNN's OpenCL shims failed ({why}); full log: {log_path}")


def binutil(compiler: Compiler, tool: str) -> str:
    """The binutils ``tool`` of ``compiler``'s toolchain (``aarch64-linux-gnu-objcopy`` beside
    ``aarch64-linux-gnu-g++``); BuildError naming the package when it is missing."""
    name = compiler.cxx.name.removesuffix("g++") + tool
    found = shutil.which(name, path=str(compiler.cxx.parent)) or shutil.which(name)
    if found is None:
        raise BuildError(f"{name} is not installed (apt-get install binutils)")
    return found
