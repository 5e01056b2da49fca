"""The frameworks' source trees: a folder or archive the user gives, else an archive found in
``native_root()/sources/``. Archives are extracted once (safely) under ``native_root()/extracted``.

A build never downloads: when a source is missing, the error names the file, the project it
comes from and, for ncnn, the one command that fetches it (:func:`fetch_ncnn_sdist`, which asks
pip for the pinned sdist when the user runs ``edgebench runners fetch-sources``).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from edgebench.builds import BuildError, native_root
from edgebench.builds.recipe import library_recipes
from edgebench.converters.artifact_cache import file_sha256
from edgebench.paths import exclusive_lock

log = logging.getLogger(__name__)

#: The frameworks the native runner can link (each folder with a ``build`` recipe), and their
#: CMake project() names.
FRAMEWORKS = {name: recipe.project for name, recipe in library_recipes().items()}

#: Where each framework's source comes from: its project page.
PROJECT_PAGES = {name: recipe.page for name, recipe in library_recipes().items()}

#: The pinned ncnn source: the sdist of the `ncnn` package, version 1.0.20250428 (it carries
#: glslang and the Vulkan shaders). ``edgebench runners fetch-sources`` has pip download it.
NCNN_VERSION = "1.0.20250428"
NCNN_REQUIREMENT = f"ncnn=={NCNN_VERSION}"
NCNN_SDIST_NAME = f"ncnn-{NCNN_VERSION}.tar.gz"
NCNN_SDIST_SHA256 = "891ebd7ce68172fb8cdc2455c34c01ecf8f814ea233d043489bb35f5daab2dd2"
FETCH_COMMAND = "edgebench runners fetch-sources"
NCNN_SDIST_WHERE = (
    f"`{FETCH_COMMAND}` has pip download {NCNN_SDIST_NAME}, the source distribution of the "
    f"package ncnn {NCNN_VERSION}"
)
#: How long one pip run may take (it builds the sdist's metadata in a fresh environment).
PIP_TIMEOUT_S = 900


@dataclass(frozen=True)
class PinnedSdist:
    """A package's source distribution that ``edgebench runners fetch-sources`` has pip fetch,
    checked against its sha256."""

    project: str  # the package's name on the index
    version: str
    file_name: str
    sha256: str
    hint: str  # the other way to get it, ending the error line when pip fails

    @property
    def requirement(self) -> str:
        return f"{self.project}=={self.version}"


NCNN_SDIST = PinnedSdist(
    "ncnn", NCNN_VERSION, NCNN_SDIST_NAME, NCNN_SDIST_SHA256, "or pass --source ncnn=FILE"
)
#: llama-cpp-python's sdist vendors llama.cpp whole, with vocabulary-only GGUF files
#: (edgebench/models/llm_vocab.py takes the qwen2 one from it).
LLAMA_CPP_SDIST = PinnedSdist(
    "llama-cpp-python",
    "0.3.36",
    "llama_cpp_python-0.3.36.tar.gz",
    "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
    "or copy it from another machine",
)
FETCHED_SDISTS = (NCNN_SDIST, LLAMA_CPP_SDIST)
KNOWN_SHA256 = {pin.file_name: pin.sha256 for pin in FETCHED_SDISTS}
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")


class UnreadableArchive(BuildError):
    """An archive that is damaged or not an archive at all."""


@dataclass(frozen=True)
class Source:
    framework: str
    version: str  # as the framework reports it ("1.0.20250428"), or "unknown"
    root: Path  # the folder holding the top CMakeLists.txt
    origin: Path  # the archive or folder it came from
    #: What identifies the source's bytes: the archive's sha256, or ``dir:<path>`` for a folder.
    digest: str = ""


def sources_dir() -> Path:
    """Where the user puts downloaded source archives (beside the builds, so that
    ``$EDGEBENCH_NATIVE_DIR`` moves both)."""
    return native_root() / "sources"


def missing_source_message(framework: str) -> str:
    recipe = library_recipes().get(framework)
    if recipe is not None and recipe.missing_source is not None:
        return recipe.missing_source()
    return (
        f"no {framework} source: put a {FRAMEWORKS.get(framework, framework)}-<version>.tar.gz "
        f"(or .zip) of its source from {PROJECT_PAGES.get(framework, 'its project page')} into "
        f"{sources_dir()}/ or pass --source {framework}=PATH (an archive or a checkout)"
    )


# --- fetching the ncnn sdist through pip ---------------------------------------------------------

#: pip's complaint when an sdist's metadata names another version than its file: ncnn's setup.py
#: stamps the day it runs into the version. The URL it names is the file pip found.
_INCONSISTENT = re.compile(r"from (\S+?) has inconsistent version", re.IGNORECASE)


def pip_download_argv(requirement: str, dest: Path, project: str = "ncnn") -> list[str]:
    """``pip download`` of ``project``'s sdist into ``dest``, by this Python's pip: its index,
    proxy and certificates are the user's pip configuration (``PIP_INDEX_URL``, pip.conf). Only
    ``project`` must be a source archive: the build tools pip installs to read its metadata
    may be wheels."""
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        project,
        "--disable-pip-version-check",
        "--no-input",
        "--dest",
        str(dest),
        requirement,
    ]


def fetch_ncnn_sdist(
    dest: Path | None = None,
    *,
    sha256: str = NCNN_SDIST_SHA256,
    progress: Callable[[str], None] = lambda line: None,
) -> Path:
    """The pinned ncnn sdist in ``dest`` (the sources folder): :func:`fetch_sdist`."""
    return fetch_sdist(replace(NCNN_SDIST, sha256=sha256), dest, progress)


def fetch_sdist(
    pin: PinnedSdist, dest: Path | None = None, progress: Callable[[str], None] = lambda line: None
) -> Path:
    """The pinned sdist in ``dest`` (the sources folder), downloaded by pip when it is not
    there yet and checked against its sha256. pip first asks for it by name and version; when
    pip discards the file because the metadata's version is today's date (ncnn's), the file pip
    named is asked for by its own reference (pip then checks the name only). BuildError in one
    line when pip fails or the file's sha256 is not the pinned one; nothing half-fetched is
    kept."""
    dest = dest or sources_dir()
    sha256 = pin.sha256
    target = dest / pin.file_name
    if target.is_file() and file_sha256(target) == sha256:
        progress(f"{target} is here already (sha256 {sha256})")
        return target
    dest.mkdir(parents=True, exist_ok=True)
    scratch = dest / f".fetch-{os.getpid()}.tmp"
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        problem = _pip_download(pin.requirement, scratch, progress, pin.project)
        found = _INCONSISTENT.search(problem or "")
        if problem and found and found.group(1).split("#")[0].endswith(f"/{pin.file_name}"):
            progress("pip discarded it (its setup stamps today's date as the version): by URL")
            reference = f"{pin.project} @ {found.group(1)}"
            problem = _pip_download(reference, scratch, progress, pin.project)
        if problem:
            raise BuildError(
                f"pip could not download {pin.requirement}: {problem}; or put {pin.file_name} "
                f"into {dest}/ yourself, {pin.hint}"
            )
        got = scratch / pin.file_name
        if not got.is_file():
            listed = ", ".join(sorted(p.name for p in scratch.iterdir())) or "nothing"
            raise BuildError(f"pip downloaded {listed} into {scratch}, not {pin.file_name}")
        digest = file_sha256(got)
        if digest != sha256:
            raise BuildError(
                f"the {pin.file_name} pip downloaded has sha256 {digest}, not the pinned "
                f"{sha256}: not kept (is pip's index the one you meant?)"
            )
        os.replace(got, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    progress(f"{target} (sha256 {sha256})")
    return target


def _pip_download(
    requirement: str, dest: Path, progress: Callable[[str], None], project: str
) -> str | None:
    """Run pip download; None when it succeeded, else its error lines in one line."""
    argv = pip_download_argv(requirement, dest, project)
    progress("running: " + " ".join(_shown(arg) for arg in argv))
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return f"pip took more than {PIP_TIMEOUT_S} s"
    if done.returncode == 0:
        return None
    return _pip_problem(done.stdout + "\n" + done.stderr)


def _pip_problem(output: str) -> str:
    """pip's complaint in one line: the inconsistent-version line when there is one (it names
    the file), else its ERROR lines, else its last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if _INCONSISTENT.search(line):
            return line
    errors = [line for line in lines if line.startswith("ERROR:")]
    return " ".join(errors or lines[-1:] or ["no output"])[:600]


def _shown(arg: str) -> str:
    return f"'{arg}'" if any(c in arg for c in " :*@") else arg


def find_source(framework: str, given: Path | None = None) -> Source:
    """The source of ``framework``: ``given`` (an archive or a folder), else the newest
    ``<framework>-<version>`` archive in :func:`sources_dir`."""
    if framework not in FRAMEWORKS:
        raise BuildError(f"unknown framework {framework!r}: choose one of {', '.join(FRAMEWORKS)}")
    library_of = library_recipes()[framework].library_of
    if library_of:  # mnn-llm: MNN's source, whose library holds it
        return find_source(library_of, given)
    found_here = given is None
    if given is None:
        given = _newest_archive(framework)
        if given is None:
            raise BuildError(missing_source_message(framework))
    given = given.expanduser().absolute()
    digest = f"dir:{given}"
    if given.is_dir():
        root = _source_root(given, framework)
    elif given.is_file() and given.name.lower().endswith(ARCHIVE_SUFFIXES):
        try:
            digest = file_sha256(given)
            folder = extract_archive(given, digest)
        except UnreadableArchive as exc:
            fix = (
                f"remove it from {given.parent} or download it again"
                if found_here
                else f"download it again, or pass --source {framework}=FOLDER with the unpacked "
                "source"
            )
            raise BuildError(f"{exc}; {fix}") from None
        root = _source_root(folder, framework)
    elif given.exists():
        raise BuildError(
            f"{framework} source {given} is neither a folder nor a .tar.gz, .tgz or .zip archive"
        )
    else:
        raise BuildError(f"{framework} source {given} does not exist")
    recipe = library_recipes()[framework]
    version = recipe.read_version(root)
    commit = re.match(r"[^-]+-([0-9a-f]{7,40})\b", archive_stem(given).lower())
    if recipe.archives_name_commits and commit:
        version = f"{version}+{commit.group(1)}"
    log.info("%s %s from %s", framework, version, given)
    return Source(framework, version, root, given, digest)


def archive_stem(path: Path) -> str:
    name = path.name
    for suffix in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


def _newest_archive(framework: str) -> Path | None:
    find_archive = library_recipes()[framework].find_archive
    if find_archive is not None:
        return find_archive()
    folder = sources_dir()
    if not folder.is_dir():
        return None
    found = []
    for path in folder.iterdir():
        stem = archive_stem(path)
        if stem == path.name or not path.is_file():
            continue
        head, _, version = stem.partition("-")
        # TNN's archives carry a commit (TNN-f0cb081-src), the others a version number.
        by_commit = library_recipes()[framework].archives_name_commits
        if head.lower() == framework and (re.match(r"\d", version) or by_commit):
            found.append((_version_key(version), path.name, path))
    return max(found)[2] if found else None


def extract_archive(archive: Path, sha: str | None = None) -> Path:
    """Extract ``archive`` once into ``native_root()/extracted/<stem>-<sha12>/`` and return that
    folder. Refuses members with absolute paths or ``..``, links out of the tree, and a known
    archive (the pinned ncnn sdist) whose sha256 differs from the pinned one. ``sha``: the
    archive's sha256 when the caller has it already."""
    sha = sha or file_sha256(archive)
    expected = KNOWN_SHA256.get(archive.name)
    if expected and sha != expected:
        raise BuildError(
            f"{archive} has sha256 {sha}, not the pinned {expected}: download it again "
            f"({NCNN_SDIST_WHERE if archive.name == NCNN_SDIST_NAME else 'from its source'})"
        )
    folder = native_root() / "extracted" / f"{archive_stem(archive)}-{sha[:12]}"
    done = folder / ".extracted"
    if done.is_file():
        return folder
    with exclusive_lock(folder.with_name(f".{folder.name}.lock")):
        if done.is_file():
            return folder
        # With the lock held, no other extraction of this archive is under way: these are
        # what killed ones left.
        for stale in folder.parent.glob(f".{folder.name}.*.tmp"):
            log.warning("removing %s, left half-extracted by an interrupted build", stale)
            shutil.rmtree(stale, ignore_errors=True)
        tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
        shutil.rmtree(folder, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            _extract_into(archive, tmp)
            (tmp / ".extracted").write_text(f"{archive}\n{sha}\n")
            os.replace(tmp, folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    log.info("extracted %s into %s", archive, folder)
    return folder


def _unsafe_member(name: str) -> bool:
    path = PurePosixPath(name.replace("\\", "/"))
    return path.is_absolute() or ".." in path.parts or re.match(r"^[A-Za-z]:", name) is not None


def _extract_into(archive: Path, dest: Path) -> None:
    try:
        if archive.name.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as zipped:
                bad = [n for n in zipped.namelist() if _unsafe_member(n)]
                if bad:
                    raise BuildError(f"{archive} holds an unsafe path {bad[0]!r}: not extracted")
                zipped.extractall(dest)
            return
        with tarfile.open(archive, "r:*") as tar:
            members = tar.getmembers()
            for member in members:
                if _unsafe_member(member.name) or (
                    (member.issym() or member.islnk()) and _unsafe_link(member)
                ):
                    raise BuildError(
                        f"{archive} holds an unsafe path {member.name!r}: not extracted"
                    )
                if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
                    raise BuildError(
                        f"{archive} holds a special file {member.name!r}: not extracted"
                    )
            if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later
                tar.extractall(dest, members=members, filter="data")
            else:
                tar.extractall(dest, members=members)
    except (tarfile.TarError, zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
        raise UnreadableArchive(f"cannot extract {archive}: {_archive_problem(exc)}") from None


def _archive_problem(exc: BaseException) -> str:
    """What is wrong with an archive, in one line (tarfile lists each method it tried)."""
    if isinstance(exc, tarfile.ReadError) and "could not be opened" in str(exc):
        return "it is not a tar archive (plain, gzip, bzip2 or xz)"
    if isinstance(exc, EOFError | tarfile.ReadError) and not str(exc).strip():
        return "it ends early (truncated)"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"it is damaged or not an archive ({text[:200]})"


def _unsafe_link(member: tarfile.TarInfo) -> bool:
    link = PurePosixPath(member.linkname)
    if link.is_absolute():
        return True
    if member.islnk():  # hard links name a path from the archive's top
        return ".." in link.parts
    depth = len(PurePosixPath(member.name).parent.parts)
    for part in link.parts:
        depth += -1 if part == ".." else (0 if part == "." else 1)
        if depth < 0:
            return True
    return False


def _source_root(folder: Path, framework: str) -> Path:
    """``folder`` if it holds the top CMakeLists.txt, else its one subfolder that does (an
    archive's ``<name>-<version>/``)."""
    root = folder
    if not (folder / "CMakeLists.txt").is_file():
        subs = [p for p in folder.iterdir() if p.is_dir() and (p / "CMakeLists.txt").is_file()]
        if len(subs) != 1:
            raise BuildError(f"no CMakeLists.txt in {folder}: not a {framework} source tree")
        root = subs[0]
    inner = library_recipes()[framework].source_subfolder
    if inner and (root / inner / "CMakeLists.txt").is_file():
        root = root / inner
    project = FRAMEWORKS[framework]
    text = (root / "CMakeLists.txt").read_text(errors="replace")
    declared = rf'^\s*project\s*\(\s*"?{re.escape(project)}\b'
    if not re.search(declared, text, re.IGNORECASE | re.MULTILINE):
        raise BuildError(
            f"{root} is not the {framework} source: its CMakeLists.txt has no project({project})"
        )
    return root
