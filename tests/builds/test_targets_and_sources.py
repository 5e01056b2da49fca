"""The native runner's host-side build: targets, compiler discovery, sources, cache keys, the
library and runner steps driven by fake tools (no real compiler runs here), the manifest check
and the `edgebench runners` commands' one-line errors."""

from __future__ import annotations

import io
import json
import logging
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from edgebench.builds import NATIVE_DIR_ENV, BuildError, native_root
from edgebench.builds import compilers as compilers_mod
from edgebench.builds import targets as targets_mod
from edgebench.builds.benchncnn import build_benchncnn
from edgebench.builds.compilers import Compiler, find_compiler, short_version
from edgebench.builds.libraries import (
    build_library,
    framework_flags,
    library_folder,
    read_library,
)
from edgebench.builds.native_runner import build_runner, find_runner, list_runners
from edgebench.builds.recipe import library_recipes
from edgebench.builds.sources import (
    NCNN_SDIST_NAME,
    NCNN_SDIST_SHA256,
    NCNN_SDIST_WHERE,
    Source,
    find_source,
)
from edgebench.builds.targets import (
    TARGETS,
    Target,
    host_target,
    parse_target,
    targets_for_device,
)
from edgebench.cli.runners import parse_sources
from edgebench.converters.artifact_cache import file_sha256
from edgebench.frameworks.mnn.build import mnn_version
from edgebench.frameworks.ncnn.build import ncnn_version, ncnn_version_number

NCNN_CMAKE = "cmake_minimum_required(VERSION 3.5)\nproject(ncnn)\n"
GXX_VERSION = "g++ (Debian 12.2.0-14) 12.2.0"


@pytest.fixture(autouse=True)
def native_dir(eb_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Path:
    """The native-runner root inside this test's private cache; the host's NDK is not seen."""
    for var in (NATIVE_DIR_ENV, "ANDROID_NDK_HOME", "ANDROID_NDK_ROOT"):
        monkeypatch.delenv(var, raising=False)
        eb_env.pop(var, None)
    return native_root()


def one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and text
    return text


def script(path: Path, body: str, shebang: str = "#!/bin/sh") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{shebang}\n{body}")
    path.chmod(0o755)
    return path


def fake_gcc(bin_dir: Path, prefix: str = "", version: str = GXX_VERSION) -> None:
    """gcc and g++ that print a version, name a static runtime library beside themselves (an
    empty file), and write their -o file (no compiling)."""
    (bin_dir / "libgomp.a").parent.mkdir(parents=True, exist_ok=True)
    (bin_dir / "libgomp.a").write_bytes(b"!<arch>\n")
    body = (
        "import os, sys\n"
        f"if sys.argv[1:] == ['--version']:\n    print({version!r}); sys.exit(0)\n"
        "if sys.argv[1].startswith('-print-file-name='):\n"
        "    name = sys.argv[1].split('=', 1)[1]\n"
        "    print(os.path.join(os.path.dirname(os.path.abspath(__file__)), name)); sys.exit(0)\n"
        "args = sys.argv[1:]\n"
        "if any('broken' in a for a in args):\n"
        "    print('main.cpp:3:1: error: expected declaration'); sys.exit(1)\n"
        "out = args[args.index('-o') + 1]\n"
        "open(out, 'wb').write(b'ELF fake ' + ' '.join(args).encode())\n"
    )
    for name in ("gcc", "g++"):
        script(bin_dir / f"{prefix}{name}", body, f"#!{sys.executable}")


FAKE_CMAKE = """import pathlib, sys
args = sys.argv[1:]
if args[0] == "-S":
    if args[1].endswith("ncnn-fail"):
        print("-- The CXX compiler identification is GNU 12.2.0")
        print("-- Looking for strerror_r - found")
        print("CMake Error at CMakeLists.txt:3 (project):")
        print("  No CMAKE_CXX_COMPILER could be found.")
        sys.exit(1)
    prefix = next(a.split("=", 1)[1] for a in args if a.startswith("-DCMAKE_INSTALL_PREFIX="))
    build = pathlib.Path(args[args.index("-B") + 1])
    build.mkdir(parents=True, exist_ok=True)
    (build / "prefix").write_text(prefix)
    with open(build.parent.parent / "cmake-calls", "a") as f:
        f.write(" ".join(args) + "\\n")
else:
    prefix = pathlib.Path((pathlib.Path(args[1]) / "prefix").read_text())
    (prefix / "include" / "ncnn").mkdir(parents=True)
    (prefix / "lib").mkdir()
    (prefix / "lib" / "libncnn.a").write_bytes(b"!<arch>\\n")
    print("[100%] Built target ncnn")
"""


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH holding only fake gcc, g++ and cmake, on an x86_64 host."""
    bin_dir = tmp_path / "fake-bin"
    fake_gcc(bin_dir)
    script(bin_dir / "cmake", FAKE_CMAKE, f"#!{sys.executable}")
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr("platform.machine", lambda: "x86_64")
    return bin_dir


def ncnn_tree(folder: Path, version: str | None = "1.0.20250428", cmake: str = NCNN_CMAKE) -> Path:
    folder.mkdir(parents=True)
    (folder / "CMakeLists.txt").write_text(cmake)
    (folder / "src").mkdir()
    (folder / "src" / "net.h").write_text("// net\n")
    if version:
        (folder / "PKG-INFO").write_text(f"Metadata-Version: 2.4\nName: ncnn\nVersion: {version}\n")
    return folder


def tarball(path: Path, tree: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        tar.add(tree, arcname=tree.name)
    return path


def fake_source(version: str = "1.0.20250428", framework: str = "ncnn") -> Source:
    return Source(framework, version, Path("/src/ncnn"), Path("/src/ncnn.tar.gz"))


def fake_compiler(version: str = GXX_VERSION, args: tuple[str, ...] = ()) -> Compiler:
    return Compiler("gcc", Path("/usr/bin/gcc"), Path("/usr/bin/g++"), list(args), [], version)


# --- targets ----------------------------------------------------------------------------------


def test_parse_target_and_its_one_line_error():
    assert parse_target("aarch64-android") == Target("aarch64-android", "aarch64", True)
    assert parse_target(" X86_64-Linux ") is TARGETS["x86_64-linux"]
    with pytest.raises(BuildError) as exc:
        parse_target("armv7-linux")
    assert one_line(exc) == (
        "unknown target 'armv7-linux': choose one of x86_64-linux, aarch64-linux, aarch64-android"
    )


@pytest.mark.parametrize(
    ("machine", "expected"), [("x86_64", "x86_64-linux"), ("aarch64", "aarch64-linux")]
)
def test_host_target(monkeypatch, machine, expected):
    monkeypatch.setattr(targets_mod.platform, "machine", lambda: machine)
    assert host_target().name == expected


def test_host_target_of_an_unknown_machine(monkeypatch):
    monkeypatch.setattr(targets_mod.platform, "machine", lambda: "riscv64")
    with pytest.raises(BuildError) as exc:
        host_target()
    assert "'riscv64'" in one_line(exc) and "--target" in one_line(exc)


def test_targets_for_device_prefer_android_then_static_linux():
    names = lambda ts: [t.name for t in ts]  # noqa: E731
    assert names(targets_for_device("arm64-v8a", True)) == ["aarch64-android", "aarch64-linux"]
    assert names(targets_for_device("aarch64", False)) == ["aarch64-linux"]
    assert names(targets_for_device("arm64", False)) == ["aarch64-linux"]
    assert names(targets_for_device("amd64", False)) == ["x86_64-linux"]
    assert names(targets_for_device("x86_64", True)) == ["x86_64-linux"]
    assert targets_for_device("armv7l", True) == []


# --- compilers --------------------------------------------------------------------------------


def test_missing_compilers_are_one_line_with_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(compilers_mod.platform, "machine", lambda: "x86_64")
    with pytest.raises(BuildError) as exc:
        find_compiler(TARGETS["aarch64-linux"])
    assert one_line(exc) == (
        "no aarch64 compiler: install Debian's cross compiler (apt-get install "
        "g++-aarch64-linux-gnu) or give --ndk PATH for an Android build"
    )
    with pytest.raises(BuildError) as exc:
        find_compiler(TARGETS["x86_64-linux"])
    assert "apt-get install g++" in one_line(exc)


def test_cross_gcc_found_on_path(monkeypatch, tmp_path):
    fake_gcc(
        tmp_path / "bin", "aarch64-linux-gnu-", "aarch64-linux-gnu-g++ (Debian 12.2.0-14) 12.2.0"
    )
    fake_gcc(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(compilers_mod.platform, "machine", lambda: "x86_64")
    compiler = find_compiler(TARGETS["aarch64-linux"])
    cxx = tmp_path / "bin" / "aarch64-linux-gnu-g++"
    assert compiler.kind == "cross-gcc" and compiler.cxx == cxx
    assert compiler.cmake_args == [
        "-DCMAKE_SYSTEM_NAME=Linux",
        "-DCMAKE_SYSTEM_PROCESSOR=aarch64",
        f"-DCMAKE_C_COMPILER={tmp_path / 'bin' / 'aarch64-linux-gnu-gcc'}",
        f"-DCMAKE_CXX_COMPILER={cxx}",
    ]
    assert compiler.link_flags == ["-static", "-fopenmp", "-pthread", "-s"]
    assert compiler.short == "aarch64-linux-gnu-g++ 12.2.0"
    # On an aarch64 host the native g++ builds aarch64-linux, with no cross settings.
    monkeypatch.setattr(compilers_mod.platform, "machine", lambda: "aarch64")
    native = find_compiler(TARGETS["aarch64-linux"])
    assert native.kind == "gcc" and native.cxx.name == "g++"
    assert not any("SYSTEM_NAME" in a for a in native.cmake_args)


def test_ndk_missing_or_incomplete(monkeypatch, tmp_path):
    with pytest.raises(BuildError) as exc:
        find_compiler(TARGETS["aarch64-android"])
    assert "--ndk PATH" in one_line(exc) and "ANDROID_NDK_HOME" in one_line(exc)
    monkeypatch.setenv("ANDROID_NDK_HOME", str(tmp_path / "ndk"))
    with pytest.raises(BuildError) as exc:
        find_compiler(TARGETS["aarch64-android"])
    text = one_line(exc)
    assert str(tmp_path / "ndk") in text and "$ANDROID_NDK_HOME" in text
    assert "build/cmake/android.toolchain.cmake" in text and "--ndk PATH" in text


def test_ndk_compiler(tmp_path):
    ndk = tmp_path / "android-ndk-r27"
    (ndk / "build/cmake").mkdir(parents=True)
    (ndk / "build/cmake/android.toolchain.cmake").write_text("")
    clang = "Android (12285214, +pgo, based on r522817b) clang version 18.0.2 (https://x y)"
    bin_dir = ndk / "toolchains/llvm/prebuilt/linux-x86_64/bin"
    for name in ("aarch64-linux-android24-clang", "aarch64-linux-android24-clang++"):
        script(bin_dir / name, f"echo '{clang}'\n")
    compiler = find_compiler(TARGETS["aarch64-android"], ndk)
    assert compiler.kind == "ndk" and compiler.cxx.name == "aarch64-linux-android24-clang++"
    assert compiler.cmake_args == [
        f"-DCMAKE_TOOLCHAIN_FILE={ndk / 'build/cmake/android.toolchain.cmake'}",
        "-DANDROID_ABI=arm64-v8a",
        "-DANDROID_PLATFORM=android-24",
    ]
    assert compiler.link_flags == [
        "-static-libstdc++",
        "-fopenmp",
        "-static-openmp",
        "-pthread",
        "-s",
    ]
    assert compiler.version == clang
    assert compiler.short == "aarch64-linux-android24-clang++ 18.0.2"
    assert short_version("weird compiler") == "weird compiler"


# --- sources ----------------------------------------------------------------------------------


def test_source_from_a_tarball_is_extracted_once(tmp_path):
    archive = tarball(
        tmp_path / "dl" / "ncnn-1.0.20240101.tar.gz",
        ncnn_tree(tmp_path / "t" / "ncnn-1.0.20240101", "1.0.20240101"),
    )
    source = find_source("ncnn", archive)
    assert source.version == "1.0.20240101" and source.origin == archive
    assert source.root.name == "ncnn-1.0.20240101"
    assert source.root.parent.parent == native_root() / "extracted"
    assert source.root.parent.name.startswith("ncnn-1.0.20240101-")
    marker = source.root.parent / ".extracted"
    before = marker.stat().st_mtime_ns
    assert find_source("ncnn", archive) == source
    assert marker.stat().st_mtime_ns == before


def test_source_folder_is_used_in_place(tmp_path):
    tree = ncnn_tree(
        tmp_path / "ncnn", version=None, cmake=NCNN_CMAKE + "set(NCNN_VERSION 20240410)\n"
    )
    source = find_source("ncnn", tree)
    assert source.root == tree and source.version == "1.0.20240410"


def test_newest_cached_archive_wins(tmp_path):
    sources = native_root() / "sources"
    for version in ("1.0.20240410", "1.0.20241226", "1.0.20240102"):
        tarball(
            sources / f"ncnn-{version}.tar.gz",
            ncnn_tree(tmp_path / version / f"ncnn-{version}", version),
        )
    (sources / "mnn-3.0.0.tar.gz").write_bytes(b"not ncnn")
    assert find_source("ncnn").version == "1.0.20241226"


def test_missing_ncnn_source_names_the_pinned_file(tmp_path):
    with pytest.raises(BuildError) as exc:
        find_source("ncnn")
    text = one_line(exc)
    assert NCNN_SDIST_WHERE in text and NCNN_SDIST_SHA256 in text and "--source ncnn=FILE" in text
    assert str(native_root() / "sources") in text
    with pytest.raises(BuildError) as exc:
        find_source("ncnn", tmp_path / "nope.tar.gz")
    assert one_line(exc) == f"ncnn source {tmp_path / 'nope.tar.gz'} does not exist"
    with pytest.raises(BuildError) as exc:
        find_source("tnn")
    assert "no tnn source" in one_line(exc) and "github.com/Tencent/TNN" in one_line(exc)
    with pytest.raises(BuildError) as exc:
        find_source("tflite")
    assert "unknown framework 'tflite'" in one_line(exc)


def test_tnn_archive_named_by_commit_is_found_with_its_version(tmp_path):
    tree = tmp_path / "t" / "TNN-f0cb081"
    tree.mkdir(parents=True)
    (tree / "CMakeLists.txt").write_text(
        "project(TNN)\n"
        + "".join(
            f"set(TNN_{part}_VERSION {n})\n"
            for part, n in (("MAJOR", 0), ("MINOR", 3), ("PATCH", 0), ("BUILD", 0))
        )
    )
    sources = native_root() / "sources"
    sources.mkdir(parents=True)
    archive = tarball(sources / "TNN-f0cb081-src.tar.gz", tree)
    source = find_source("tnn")
    assert source.origin == archive and source.version == "0.3.0.0+f0cb081"
    assert source.digest == file_sha256(archive)


def test_pinned_sdist_with_another_sha256_is_refused(tmp_path):
    archive = tarball(tmp_path / NCNN_SDIST_NAME, ncnn_tree(tmp_path / "t" / "ncnn-1.0.20250428"))
    with pytest.raises(BuildError) as exc:
        find_source("ncnn", archive)
    assert f"not the pinned {NCNN_SDIST_SHA256}" in one_line(exc)
    assert not (native_root() / "extracted").exists() or not any(
        (native_root() / "extracted").iterdir()
    )


def test_other_trees_are_refused(tmp_path):
    tree = ncnn_tree(tmp_path / "mnn", cmake="project(MNN)\n")
    with pytest.raises(BuildError) as exc:
        find_source("ncnn", tree)
    assert "has no project(ncnn)" in one_line(exc)
    (tmp_path / "empty").mkdir()
    with pytest.raises(BuildError) as exc:
        find_source("ncnn", tmp_path / "empty")
    assert "no CMakeLists.txt" in one_line(exc)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(BuildError) as exc:
        find_source("ncnn", tmp_path / "notes.txt")
    assert "neither a folder nor" in one_line(exc)


def _tar_with(path: Path, member: tarfile.TarInfo, data: bytes = b"x") -> Path:
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("ncnn-1/CMakeLists.txt")
        info.size = len(NCNN_CMAKE)
        tar.addfile(info, io.BytesIO(NCNN_CMAKE.encode()))
        member.size = len(data) if member.isfile() else 0
        tar.addfile(member, io.BytesIO(data) if member.isfile() else None)
    return path


@pytest.mark.parametrize("name", ["../evil.txt", "/etc/evil", "ncnn-1/../../evil"])
def test_unsafe_tar_members_are_refused(tmp_path, name):
    archive = _tar_with(tmp_path / "ncnn-1.tar.gz", tarfile.TarInfo(name))
    with pytest.raises(BuildError) as exc:
        find_source("ncnn", archive)
    assert "unsafe path" in one_line(exc)
    assert not (tmp_path / "evil.txt").exists()


def test_tar_link_out_of_the_tree_is_refused(tmp_path):
    link = tarfile.TarInfo("ncnn-1/src")
    link.type, link.linkname = tarfile.SYMTYPE, "../../../etc"
    with pytest.raises(BuildError) as exc:
        find_source("ncnn", _tar_with(tmp_path / "ncnn-1.tar.gz", link))
    assert "unsafe path 'ncnn-1/src'" in one_line(exc)


def test_zip_source_and_unsafe_zip(tmp_path):
    good = tmp_path / "ncnn-1.0.20240101.zip"
    with zipfile.ZipFile(good, "w") as zipped:
        zipped.writestr("ncnn-x/CMakeLists.txt", NCNN_CMAKE)
        zipped.writestr("ncnn-x/PKG-INFO", "Name: ncnn\nVersion: 1.0.20240101\n")
    assert find_source("ncnn", good).version == "1.0.20240101"
    bad = tmp_path / "ncnn-2.zip"
    with zipfile.ZipFile(bad, "w") as zipped:
        zipped.writestr("../evil.txt", "x")
    with pytest.raises(BuildError) as exc:
        find_source("ncnn", bad)
    assert "unsafe path '../evil.txt'" in one_line(exc)


def test_versions(tmp_path):
    stamped = ncnn_tree(
        tmp_path / "git",
        version=None,
        cmake=NCNN_CMAKE
        + (
            'if(NOT DEFINED NCNN_VERSION)\n    string(TIMESTAMP NCNN_VERSION "%Y%m%d")\nendif()\n'
            "set(NCNN_VERSION_STRING ${NCNN_VERSION_MAJOR}.${NCNN_VERSION_MINOR})\n"
        ),
    )
    assert ncnn_version(stamped) == "unknown"
    literal = ncnn_tree(
        tmp_path / "lit", None, NCNN_CMAKE + 'set(NCNN_VERSION_STRING "1.0.20230517")\n'
    )
    assert ncnn_version(literal) == "1.0.20230517"
    assert ncnn_version_number("1.0.20250428") == "20250428"
    assert ncnn_version_number("unknown") is None
    header = tmp_path / "mnn" / "include" / "MNN" / "MNNDefine.h"
    header.parent.mkdir(parents=True)
    header.write_text(
        "#define MNN_VERSION_MAJOR 3\n#define MNN_VERSION_MINOR 1\n#define MNN_VERSION_PATCH 2\n"
    )
    assert mnn_version(tmp_path / "mnn") == "3.1.2"
    assert mnn_version(tmp_path) == "unknown"


# --- libraries --------------------------------------------------------------------------------


def test_library_folder_changes_with_version_target_compiler_and_flags():
    x86, arm = TARGETS["x86_64-linux"], TARGETS["aarch64-linux"]
    base = library_folder(fake_source(), x86, fake_compiler())
    assert base.parent == native_root() / "libs"
    assert (
        base.name.startswith("ncnn-1.0.20250428-x86_64-linux-")
        and len(base.name.split("-")[-1]) == 10
    )
    assert library_folder(fake_source(), x86, fake_compiler()) == base
    others = {
        library_folder(fake_source("1.0.20240410"), x86, fake_compiler()),
        library_folder(fake_source(), arm, fake_compiler()),
        library_folder(fake_source(), x86, fake_compiler("g++ (Debian 13.1.0) 13.1.0")),
        library_folder(fake_source(), x86, fake_compiler(args=("-DCMAKE_C_FLAGS=-O1",))),
    }
    assert base not in others and len(others) == 4


def _option_names(source, target: str) -> list[str]:
    """The CMake options a build sets, without their values (a hook file's path can hold any
    word: a checkout under /root/ci-gpu/ has "gpu" in every one)."""
    return [flag.split("=")[0] for flag in framework_flags(source, TARGETS[target])]


def test_framework_flags_pin_the_version():
    ncnn = framework_flags(fake_source(), TARGETS["x86_64-linux"])
    assert "-DNCNN_VERSION=20250428" in ncnn
    # Vulkan (loaded at run time) on the host's build only; aarch64 stays CPU-only.
    assert "-DNCNN_VULKAN=ON" in ncnn and "-DNCNN_SIMPLEVK=ON" in ncnn
    assert "-DNCNN_VULKAN=OFF" in framework_flags(fake_source(), TARGETS["aarch64-linux"])
    assert "-DNCNN_VERSION=0" in framework_flags(fake_source("unknown"), TARGETS["x86_64-linux"])
    mnn = fake_source("3.1.2", "mnn")
    assert "-DMNN_ARM82=ON" in framework_flags(mnn, TARGETS["aarch64-android"])
    assert "-DMNN_ARM82=ON" not in framework_flags(mnn, TARGETS["x86_64-linux"])
    # MNN's Vulkan and OpenCL on x86_64 (the GPU hook with them); OpenCL on any device type
    # only when asked; an aarch64 build's flags name no GPU at all (its key stays as it was).
    x86_gpu = framework_flags(mnn, TARGETS["x86_64-linux"])
    assert {"-DMNN_VULKAN=ON", "-DMNN_OPENCL=ON"} <= set(x86_gpu)
    assert any(flag.endswith("/mnn_gpu.cmake") for flag in x86_gpu)
    assert "-DEDGEBENCH_ANY_OPENCL_DEVICE=ON" not in x86_gpu
    any_device = framework_flags(mnn, TARGETS["x86_64-linux"], gpu_devices="any")
    assert "-DEDGEBENCH_ANY_OPENCL_DEVICE=ON" in any_device
    assert not [f for f in _option_names(mnn, "aarch64-linux") if "GPU" in f.upper()]
    tnn = fake_source("0.3.0.0", "tnn")
    tnn_x86 = framework_flags(tnn, TARGETS["x86_64-linux"], gpu_devices="any")
    assert "-DTNN_OPENCL_ENABLE=ON" in tnn_x86 and "-DEDGEBENCH_ANY_OPENCL_DEVICE=ON" in tnn_x86
    assert any(flag.endswith("/tnn_gpu.cmake") for flag in tnn_x86)
    assert not [f for f in _option_names(tnn, "aarch64-linux") if "OPENCL" in f]
    with pytest.raises(BuildError, match="unknown GPU devices 'all': choose one of hardware, any"):
        framework_flags(mnn, TARGETS["x86_64-linux"], gpu_devices="all")


def test_a_vulkan_library_links_the_glslang_libraries_it_installed(tools, tmp_path):
    source = find_source("ncnn", ncnn_tree(tmp_path / "ncnn"))
    x86 = TARGETS["x86_64-linux"]
    built = build_library(source, x86, find_compiler(x86), jobs=2)
    assert built.gpu_apis == ("vulkan",) and built.companions == ()
    assert built.link_args == [str(built.lib)]
    # What ncnn with Vulkan installs beside libncnn.a: glslang's libraries, which need a group.
    for name in ("libglslang.a", "libSPIRV.a"):
        (built.lib.parent / name).write_bytes(b"!<arch>\n")
    again = read_library(built.folder)
    assert again is not None
    group = [str(built.lib.parent / n) for n in ("libSPIRV.a", "libglslang.a")]
    assert again.link_args == [str(built.lib), "-Wl,--start-group", *group, "-Wl,--end-group"]
    assert "-DEB_NCNN_VULKAN" in again.compile_defines
    arm = build_library(source, TARGETS["aarch64-linux"], find_compiler(x86), jobs=2)
    assert arm.gpu_apis == () and not [d for d in arm.compile_defines if "VULKAN" in d]


def test_benchncnn_is_compiled_against_the_runners_library_once(tools, tmp_path):
    tree = ncnn_tree(tmp_path / "ncnn")
    x86 = TARGETS["x86_64-linux"]
    with pytest.raises(BuildError) as exc:
        build_benchncnn(x86, ncnn_source=tree)
    assert "has no benchmark/benchncnn.cpp (the sdist leaves it out): give " in one_line(exc)
    assert "--benchncnn-source FILE, that file from ncnn's 1.0.20250428 release" in one_line(exc)
    cpp = tmp_path / "benchncnn.cpp"
    cpp.write_text("int main() { return 0; }\n")
    lines: list[str] = []
    tool = build_benchncnn(x86, cpp, ncnn_source=tree, progress=lines.append)
    command = tool.read_bytes().decode()
    library = build_library(find_source("ncnn", tree), x86, find_compiler(x86), features="lean")
    assert str(cpp) in command and str(library.lib) in command
    assert "-static-libstdc++" in command  # Vulkan: the same link as the runner's
    assert sum(line.startswith("compiling benchncnn") for line in lines) == 1
    assert build_benchncnn(x86, cpp, ncnn_source=tree, progress=lines.append) == tool
    assert sum(line.startswith("compiling benchncnn") for line in lines) == 1


def test_library_build_failure_is_one_line_and_leaves_no_done_json(tools, tmp_path):
    tree = ncnn_tree(tmp_path / "ncnn-fail")
    source = find_source("ncnn", tree)
    compiler = find_compiler(TARGETS["x86_64-linux"])
    with pytest.raises(BuildError) as exc:
        build_library(source, TARGETS["x86_64-linux"], compiler, jobs=2)
    folder = library_folder(source, TARGETS["x86_64-linux"], compiler)
    assert one_line(exc) == (
        "ncnn 1.0.20250428 for x86_64-linux: cmake configure failed (CMake Error at "
        "CMakeLists.txt:3 (project): No CMAKE_CXX_COMPILER could be found.); full log: "
        f"{folder / 'build.log'}"
    )
    assert not (folder / "done.json").exists()


def test_missing_cmake(tools, tmp_path):
    (tools / "cmake").unlink()
    source = find_source("ncnn", ncnn_tree(tmp_path / "ncnn"))
    with pytest.raises(BuildError) as exc:
        build_library(source, TARGETS["x86_64-linux"], find_compiler(TARGETS["x86_64-linux"]))
    assert "cmake is not installed (apt-get install cmake)" in one_line(exc)


# --- the runner -------------------------------------------------------------------------------


@pytest.fixture
def runner_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "native_runner"
    (folder / "backends").mkdir(parents=True)
    (folder / "main.cpp").write_text("int main() { return 0; }\n")
    (folder / "seeded.h").write_text("#pragma once\n")
    for name in library_recipes()["ncnn"].runner_backend:  # ncnn.cpp and its parts
        (folder / "backends" / name).write_text(f"// {name}\n")
    return folder


def test_runner_build_manifest_reuse_and_tamper_check(tools, tmp_path, runner_folder, caplog):
    tree = ncnn_tree(tmp_path / "ncnn")
    lines: list[str] = []
    built = build_runner(
        "x86_64-linux", sources={"ncnn": tree}, progress=lines.append, runner_folder=runner_folder
    )
    assert built.path.name == "edgebench-native" and built.path.parent.parent.name == "x86_64-linux"
    assert built.frameworks == {"ncnn": "1.0.20250428"} and built.compiler == "g++ 12.2.0"
    assert any(
        line.startswith("building ncnn 1.0.20250428 for x86_64-linux with g++ 12.2.0")
        for line in lines
    )
    command = built.path.read_bytes().decode()
    # With ncnn's Vulkan the binary dlopens a driver: glibc shared, everything else static.
    for flag in (
        "-std=c++17 -O2 -ffp-contract=off -fno-fast-math -Wall",
        "-static-libstdc++ -static-libgcc -pthread -s",
        "fake-bin/libgomp.a -ldl",
    ):
        assert flag in command
    assert "-static " not in command
    assert "install/include/ncnn" in command and "install/lib/libncnn.a" in command
    manifest = json.loads((built.path.parent / "manifest.json").read_text())
    assert manifest["sha256"] == built.sha256 and manifest["sources"] == {"ncnn": str(tree)}
    # The runner carries the manifest's library folders, and reads each library from its own.
    assert built.libraries == manifest["libraries"] and list(built.libraries) == ["ncnn"]
    linked = built.linked_libraries()["ncnn"]
    assert linked.framework == "ncnn" and linked.folder.name == built.libraries["ncnn"]
    assert find_runner(TARGETS["x86_64-linux"]) == built and list_runners() == [built]

    # The same inputs: nothing is configured, built or compiled again.
    calls = (native_root() / "libs" / "cmake-calls").read_text()
    again = build_runner("x86_64-linux", sources={"ncnn": tree}, runner_folder=runner_folder)
    assert again == built and (native_root() / "libs" / "cmake-calls").read_text() == calls
    # A changed runner source is a new key beside the old binary.
    (runner_folder / "seeded.h").write_text("#pragma once\n// changed\n")
    changed = build_runner("x86_64-linux", sources={"ncnn": tree}, runner_folder=runner_folder)
    assert changed.path != built.path and built.path.exists()
    assert find_runner(TARGETS["x86_64-linux"]) == changed

    changed.path.write_bytes(b"tampered")
    with caplog.at_level(logging.WARNING):
        assert find_runner(TARGETS["x86_64-linux"]) is None
    assert "changed since it was built" in caplog.text
    assert list_runners() == []


def test_what_killed_builds_left_is_removed_or_resumed(tools, tmp_path, runner_folder, caplog):
    """A build killed outright (no chance to clean up) leaves a half-extracted source, a
    half-written binary and a library without done.json: the next build removes the first
    two, saying so, and resumes the library's tree, saying so."""
    archive = tarball(
        tmp_path / "dl" / "ncnn-1.0.20240101.tar.gz",
        ncnn_tree(tmp_path / "t" / "n", "1.0.20240101"),
    )
    stem = f"ncnn-1.0.20240101-{file_sha256(archive)[:12]}"
    half_extracted = native_root() / "extracted" / f".{stem}.999999.tmp"
    (half_extracted / "n").mkdir(parents=True)
    lines: list[str] = []
    with caplog.at_level(logging.WARNING):
        built = build_runner(
            "x86_64-linux",
            sources={"ncnn": archive},
            progress=lines.append,
            runner_folder=runner_folder,
        )
    assert f"removing {half_extracted}, left half-extracted" in caplog.text
    assert not half_extracted.exists()
    assert not any("resuming" in line for line in lines)

    half_written = built.path.with_name(".edgebench-native.999999.tmp")
    half_written.write_bytes(b"ELF half")
    (library,) = [p for p in (native_root() / "libs").iterdir() if (p / "done.json").exists()]
    (library / "done.json").unlink()
    lines.clear()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        again = build_runner(
            "x86_64-linux",
            sources={"ncnn": archive},
            progress=lines.append,
            force=True,
            runner_folder=runner_folder,
        )
    assert f"removing {half_written}, left half-written" in caplog.text
    assert not half_written.exists() and again.path == built.path
    assert (
        f"ncnn 1.0.20240101 for x86_64-linux: resuming the unfinished build in {library}" in lines
    )
    assert (library / "done.json").is_file()


def test_runner_compile_failure_and_missing_backend(tools, tmp_path, runner_folder):
    tree = ncnn_tree(tmp_path / "ncnn")
    (runner_folder / "broken.cpp").write_text("oops\n")
    with pytest.raises(BuildError) as exc:
        build_runner("x86_64-linux", sources={"ncnn": tree}, runner_folder=runner_folder)
    text = one_line(exc)
    assert text.startswith("compiling the native runner failed (main.cpp:3:1: error: expected")
    assert text.endswith("build.log")
    assert find_runner(TARGETS["x86_64-linux"]) is None
    with pytest.raises(BuildError) as exc:
        build_runner("x86_64-linux", frameworks=["mnn"], runner_folder=runner_folder)
    assert "has no mnn backend" in one_line(exc)
    with pytest.raises(BuildError) as exc:
        build_runner("x86_64-linux", sources={"mnn": tree}, runner_folder=runner_folder)
    assert one_line(exc).endswith("add --framework mnn")


# --- the command line -------------------------------------------------------------------------


def test_parse_sources():
    assert parse_sources(("ncnn=~/n.tar.gz",)) == {"ncnn": Path("~/n.tar.gz").expanduser()}
    for bad in ("ncnn", "=x", "tflite=x", "ncnn="):
        with pytest.raises(BuildError) as exc:
            parse_sources((bad,))
        assert one_line(exc).startswith(f"--source {bad!r}")


def test_cli_errors_are_one_line(run_cli, tmp_path):
    result = run_cli(["runners", "list"])
    assert result.returncode == 0
    assert result.stdout == "no native runner is built: edgebench runners build [--target TARGET]\n"
    result = run_cli(["runners", "build", "--target", "riscv64-linux"])
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "unknown target 'riscv64-linux'" in result.stderr
    result = run_cli(["runners", "build", "--source", "ncnn"])
    assert result.returncode == 2 and "write NAME=PATH" in result.stderr
    result = run_cli(["runners", "build", "--source", f"ncnn={tmp_path / 'missing'}"])
    assert result.returncode == 2 and result.stderr.count("\n") == 1


def test_lean_cpu_features_drop_the_run_time_dispatch_and_change_the_key():
    x86, arm = TARGETS["x86_64-linux"], TARGETS["aarch64-linux"]
    mnn = fake_source("3.6.1", "mnn")
    lean_ncnn_arm = framework_flags(fake_source(), arm, "lean")
    assert "-DNCNN_RUNTIME_CPU=OFF" in lean_ncnn_arm and "-DNCNN_ARM82=ON" in lean_ncnn_arm
    assert "-DNCNN_RUNTIME_CPU=OFF" not in framework_flags(fake_source(), arm)
    assert "-DNCNN_AVX512=OFF" in framework_flags(fake_source(), x86, "lean")
    assert "-DMNN_KLEIDIAI=OFF" in framework_flags(mnn, arm, "lean")
    assert "-DMNN_KLEIDIAI=OFF" not in framework_flags(mnn, arm)
    assert library_folder(fake_source(), arm, fake_compiler(), "lean") != library_folder(
        fake_source(), arm, fake_compiler()
    )
    with pytest.raises(BuildError) as exc:
        framework_flags(fake_source(), x86, "fast")
    assert one_line(exc) == "unknown CPU features 'fast': choose one of all, lean"
