"""`edgebench runners fetch-sources`: the pinned ncnn sdist through pip itself. pip really runs,
offline, against a local index: an empty ``--index-url`` folder and ``--find-links`` holding a
small sdist made here, whose in-tree build backend writes the metadata (the real ncnn's setup.py
stamps the day it runs into the version, which makes pip discard the file asked for by name)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from edgebench.builds import NATIVE_DIR_ENV, BuildError
from edgebench.builds.sources import (
    FETCH_COMMAND,
    NCNN_REQUIREMENT,
    NCNN_SDIST_NAME,
    NCNN_VERSION,
    fetch_ncnn_sdist,
    find_source,
    missing_source_message,
)
from edgebench.converters.artifact_cache import file_sha256

BACKEND = """\
import os

VERSION = {version!r}


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    name = "ncnn-" + VERSION + ".dist-info"
    os.makedirs(os.path.join(metadata_directory, name))
    with open(os.path.join(metadata_directory, name, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\\nName: ncnn\\nVersion: " + VERSION + "\\n")
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise RuntimeError("download only")
"""

PYPROJECT = """\
[build-system]
requires = []
build-backend = "stamp_backend"
backend-path = ["."]
"""


def fake_sdist(links: Path, metadata_version: str) -> Path:
    """``links/ncnn-<pinned>.tar.gz``: a CMake project ncnn whose metadata says
    ``metadata_version``."""
    top = links / "tree" / f"ncnn-{NCNN_VERSION}"
    top.mkdir(parents=True)
    (top / "pyproject.toml").write_text(PYPROJECT)
    (top / "stamp_backend.py").write_text(BACKEND.format(version=metadata_version))
    (top / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.5)\nproject(ncnn)\n")
    (top / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: ncnn\nVersion: {NCNN_VERSION}\n")
    archive = links / NCNN_SDIST_NAME
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(top, arcname=top.name)
    return archive


@pytest.fixture
def local_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """pip's configuration for the test: an empty index folder, a find-links folder, no
    pip.conf, no cache, no proxy. Set in this process and returned for a child's."""
    (tmp_path / "index").mkdir()
    (tmp_path / "links").mkdir()
    settings = {
        "PIP_INDEX_URL": (tmp_path / "index").as_uri(),
        "PIP_FIND_LINKS": str(tmp_path / "links"),
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_NO_CACHE_DIR": "1",
    }
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    return settings


def pip_lines(lines: list[str]) -> list[list[str]]:
    """The pip command lines a fetch said it ran, as words."""
    return [line.removeprefix("running: ").split() for line in lines if "-m pip" in line]


def test_the_missing_source_line_names_the_fetch_command(tmp_path, monkeypatch):
    """The line a build and the native tests' skips give on a fresh clone."""
    monkeypatch.setenv(NATIVE_DIR_ENV, str(tmp_path / "native"))
    text = missing_source_message("ncnn")
    assert text.startswith(f"no ncnn source: `{FETCH_COMMAND}` has pip download {NCNN_SDIST_NAME}")
    assert "package page" not in text
    assert str(tmp_path / "native" / "sources") in text
    with pytest.raises(BuildError, match=FETCH_COMMAND):
        find_source("ncnn")


def test_pip_downloads_the_pinned_sdist_by_name(local_index, tmp_path):
    archive = fake_sdist(tmp_path / "links", NCNN_VERSION)
    sha = file_sha256(archive)
    dest = tmp_path / "sources"
    lines: list[str] = []
    got = fetch_ncnn_sdist(dest, sha256=sha, progress=lines.append)
    assert got == dest / NCNN_SDIST_NAME and file_sha256(got) == sha
    (argv,) = pip_lines(lines)
    scratch = argv[argv.index("--dest") + 1]
    assert argv[:4] == [sys.executable, "-m", "pip", "download"]
    assert argv[-1] == NCNN_REQUIREMENT and "--no-deps" in argv
    assert argv[argv.index("--no-binary") + 1] == "ncnn"
    assert Path(scratch).parent == dest and not Path(scratch).exists()
    assert sorted(p.name for p in dest.iterdir()) == [NCNN_SDIST_NAME]
    # Once there and intact, it is not fetched again.
    again: list[str] = []
    assert fetch_ncnn_sdist(dest, sha256=sha, progress=again.append) == got
    assert pip_lines(again) == [] and "here already" in again[0]


def test_a_date_stamped_version_is_fetched_by_the_file_pip_named(local_index, tmp_path):
    archive = fake_sdist(tmp_path / "links", "1.0.20991231")  # setup.py's "today"
    sha = file_sha256(archive)
    lines: list[str] = []
    got = fetch_ncnn_sdist(tmp_path / "sources", sha256=sha, progress=lines.append)
    assert file_sha256(got) == sha
    by_name, by_file = pip_lines(lines)
    assert by_name[-1] == NCNN_REQUIREMENT
    assert by_file[:4] == by_name[:4] and by_file[-3:] == ["'ncnn", "@", f"{archive.as_uri()}'"]


def test_a_file_that_is_not_the_pinned_one_is_refused_and_not_kept(local_index, eb_env, tmp_path):
    """Through the command: the fake is not the pinned sdist, so its sha256 is refused."""
    fake_sdist(tmp_path / "links", NCNN_VERSION)
    env = {**eb_env, **local_index, NATIVE_DIR_ENV: str(tmp_path / "native")}
    env = {k: v for k, v in env.items() if not k.lower().endswith("_proxy")}
    done = subprocess.run(
        [sys.executable, "-m", "edgebench", *FETCH_COMMAND.split()[1:]],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "not the pinned" in last and NCNN_SDIST_NAME in last and "Traceback" not in done.stderr
    assert [p.name for p in (tmp_path / "native" / "sources").iterdir()] == []


def test_pip_finding_nothing_is_one_line(local_index, tmp_path):
    with pytest.raises(BuildError) as exc:
        fetch_ncnn_sdist(tmp_path / "sources", sha256="0" * 64)
    text = str(exc.value)
    assert "\n" not in text and text.startswith(f"pip could not download {NCNN_REQUIREMENT}: ")
    assert "--source ncnn=FILE" in text
    assert list((tmp_path / "sources").iterdir()) == []
