"""Where the tests run edgebench: the repository's paths, the shared caches (set as environment
defaults before any test module is imported) and a private cache, results folder and HOME for
every test (``eb_env``, autouse)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent

# The converter toolchains are installed once and shared by every test and every test run: in
# EDGEBENCH_TOOLCHAINS_DIR when set, else where `edgebench toolchains install` puts them for this
# user. pnnx (110 MB) is installed by the tests that need it; onnx2tf (2.6 GB) only by .ci/run
# or a user (fakes/toolchains.py). Per-test caches would reinstall them for each test.
_USER_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
os.environ.setdefault("EDGEBENCH_TOOLCHAINS_DIR", str(_USER_CACHE / "edgebench" / "toolchains"))
# Ray on loopback only: with this, Ray's own address is 127.0.0.1 instead of the machine's
# outward one (read when Ray is imported, so set before any test imports it).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
# The emulated arm64 board (~500 MB, ~2 minutes to build) is shared the same way.
os.environ.setdefault("EDGEBENCH_BOARDS_DIR", str(_USER_CACHE / "edgebench" / "boards"))
# The edgebench-native builds (minutes each) and the framework sources they are built from.
os.environ.setdefault("EDGEBENCH_NATIVE_DIR", str(_USER_CACHE / "edgebench" / "native-runner"))
# A dropped device is retried after 0.2 s waits, not the product's 1, 2 and 4 s: the fault tests
# drop devices on purpose, and the waits prove nothing that a short one does not.
os.environ.setdefault("EDGEBENCH_RETRY_BACKOFF", "0.2,0.2,0.2")


@pytest.fixture(scope="session")
def shared_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Generated built-in models, shared by the whole session (each is generated once)."""
    return tmp_path_factory.mktemp("edgebench-models")


@pytest.fixture(autouse=True)
def eb_env(shared_models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment for running edgebench: a private cache (sharing only the generated models),
    results dir and HOME, so no test sees another test's artifacts or runs; and the warnings
    said once per command forgotten, so no test is kept from a warning an earlier one had."""
    from edgebench.analysis import index_file  # here: the defaults above come first
    from edgebench.results import records

    index_file.forget_said_warnings()
    records.forget_said_warnings()
    cache = tmp_path / "eb-cache"
    cache.mkdir()
    (cache / "models").symlink_to(shared_models, target_is_directory=True)
    results = tmp_path / "eb-results"
    home = tmp_path / "eb-home"
    home.mkdir()
    monkeypatch.setenv("EDGEBENCH_CACHE", str(cache))
    monkeypatch.setenv("EDGEBENCH_RESULTS", str(results))
    env = dict(os.environ)
    env.update(EDGEBENCH_CACHE=str(cache), EDGEBENCH_RESULTS=str(results), HOME=str(home))
    return env
