"""`edgebench runners build` with a source archive that is no archive, or a damaged one: one
line naming the file and what to do, exit 2, no traceback (issue 26).

The builds never reach a compiler: a stand-in g++ on PATH only answers ``--version``, so these
tests need neither g++ nor cmake and never build anything."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest
from fakes.cli_checks import assert_one_error_line, cli


@pytest.fixture
def build_env(eb_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """A private native-runner folder (its sources/ is where archives are looked for) and a
    PATH whose g++ and gcc only print a version."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("g++", "gcc"):
        tool = tools / name
        tool.write_text('#!/bin/sh\necho "g++ (Debian 12.2.0-14) 12.2.0"\n')
        tool.chmod(0o755)
    env = dict(eb_env)
    env["EDGEBENCH_NATIVE_DIR"] = str(tmp_path / "native")
    env["PATH"] = f"{tools}{os.pathsep}{env.get('PATH', '')}"
    return env


def _tar_gz(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, data in files.items():
            zipped.writestr(name, data)
    return buffer.getvalue()


SOURCE = {
    "ncnn-1.0.1/CMakeLists.txt": b"project(ncnn)\n",
    "ncnn-1.0.1/src/net.cpp": bytes(range(256)) * 64,
}


def _bad_zip_crc() -> bytes:
    """A zip whose listing reads fine but whose compressed member is corrupted."""
    data = bytearray(_zip(SOURCE))
    data[80:120] = bytes(40)
    return bytes(data)


#: name -> (file name, content): what a user might have in place of a source archive.
ARCHIVES = {
    "random_bytes": ("ncnn-1.0.1.tar.gz", bytes(range(7, 250)) * 20),
    "html_page": ("ncnn-1.0.1.tar.gz", b"<!doctype html><title>404 Not Found</title>\n"),
    "gzip_of_no_tar": ("ncnn-1.0.1.tar.gz", gzip.compress(b"just some text\n" * 100)),
    "truncated": ("ncnn-1.0.1.tar.gz", _tar_gz(SOURCE)[:400]),
    "empty": ("ncnn-1.0.1.tgz", b""),
    "not_a_zip": ("ncnn-1.0.1.zip", b"PK but not really\n"),
    "zip_bad_crc": ("ncnn-1.0.1.zip", _bad_zip_crc()),
}


@pytest.mark.parametrize("case", sorted(ARCHIVES))
def test_source_option_with_a_bad_archive_is_one_line(build_env, tmp_path, case):
    name, content = ARCHIVES[case]
    archive = tmp_path / name
    archive.write_bytes(content)
    result = cli(["runners", "build", "--source", f"ncnn={archive}"], build_env)
    line = assert_one_error_line(result, only_line=False)
    assert f"cannot extract {archive}:" in line, line
    assert "download it again" in line and "--source ncnn=" in line, line
    assert "method gz" not in result.stderr and "ReadError" not in result.stderr, result.stderr
    assert not (Path(build_env["EDGEBENCH_NATIVE_DIR"]) / "bin").exists()


@pytest.mark.parametrize("case", ["random_bytes", "truncated", "not_a_zip"])
def test_bad_archive_in_the_sources_folder_is_named_with_its_folder(build_env, case):
    name, content = ARCHIVES[case]
    sources = Path(build_env["EDGEBENCH_NATIVE_DIR"]) / "sources"
    sources.mkdir(parents=True)
    (sources / name).write_bytes(content)
    result = cli(["runners", "build"], build_env)
    line = assert_one_error_line(result, only_line=False)
    assert f"cannot extract {sources / name}:" in line, line
    assert f"remove it from {sources} or download it again" in line, line
