"""The TensorRT engine cache and optimization profiles, which need no TensorRT: keys, sidecars,
the eviction bound, damaged entries (fake engine bytes stand in for engines), and the profile
an engine is built for."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from edgebench.runners.backends.trt_engine_cache import (
    ENV_FOLDER,
    EngineCache,
    EngineKey,
    cache_folder,
    file_sha256,
    model_cache_folder,
)
from edgebench.runners.backends.trt_profile import covers, engine_profile, is_fixed
from edgebench.runners.protocol.backend_options import TensorRTOptions
from edgebench.runners.protocol.errors import BackendError

SHAPE = [1, 3, 224, 224]
KEY = EngineKey(
    model_sha256="ab" * 32,
    profile={"input": {"min": SHAPE, "opt": SHAPE, "max": SHAPE}},
    precision="fp32",
    tensorrt_version="10.3.0",
    gpu_name="Orin (nvgpu)",
    compute_capability="8.7",
    settings={"strongly_typed": True, "tf32": False, "profiles": 1, "workspace_mb": None},
)


def test_the_key_is_stable_and_changes_with_every_ingredient() -> None:
    assert KEY.digest() == dataclasses.replace(KEY).digest()
    other_shape = [2, 3, 224, 224]
    changes = {
        "model_sha256": "cd" * 32,
        "profile": {"input": {"min": other_shape, "opt": other_shape, "max": other_shape}},
        "precision": "fp16",
        "tensorrt_version": "11.0.0",
        "gpu_name": "NVIDIA H200",
        "compute_capability": "9.0",
        "settings": {**KEY.settings, "tf32": None},
    }
    digests = {KEY.digest()}
    for field, value in changes.items():
        digests.add(dataclasses.replace(KEY, **{field: value}).digest())
    assert len(digests) == 1 + len(changes)
    reordered = dict(reversed(list(KEY.settings.items())))
    assert dataclasses.replace(KEY, settings=reordered).digest() == KEY.digest()


def test_an_engine_and_its_sidecar_round_trip(tmp_path: Path) -> None:
    cache = EngineCache(tmp_path / "cache")
    assert cache.lookup(KEY) is None
    cache.store(KEY, b"engine bytes", 1234.5678)
    found = cache.lookup(KEY)
    assert found is not None and found.data == b"engine bytes" and found.build_ms == 1234.568
    sidecar = json.loads((tmp_path / "cache" / (KEY.digest() + ".json")).read_text())
    assert sidecar["key"] == KEY.as_dict() and sidecar["size"] == len(b"engine bytes")
    assert sidecar["built_at"].endswith("Z")
    # Written through temporary files and renames: only the entry is left.
    names = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert names == [KEY.digest() + ".engine", KEY.digest() + ".json"]


def test_the_cache_keeps_the_newest_engines_and_a_hit_counts_as_new(tmp_path: Path) -> None:
    cache = EngineCache(tmp_path, keep=3)
    keys = [dataclasses.replace(KEY, precision=f"p{i}") for i in range(5)]
    past = time.time() - 1000
    for index, key in enumerate(keys[:3]):
        cache.store(key, f"engine {index}".encode(), 1.0)
        for suffix in (".engine", ".json"):  # distinct, ordered ages, whatever the clock's grain
            os.utime(tmp_path / (key.digest() + suffix), (past + index, past + index))
    assert cache.lookup(keys[0]) is not None  # now the newest
    cache.store(keys[3], b"engine 3", 1.0)
    cache.store(keys[4], b"engine 4", 1.0)
    assert len(cache.engines()) == 3
    assert cache.lookup(keys[1]) is None and cache.lookup(keys[2]) is None
    assert all(cache.lookup(k) is not None for k in (keys[0], keys[3], keys[4]))
    assert len(list(tmp_path.glob("*.json"))) == 3


@pytest.mark.parametrize(
    "damage",
    ["truncated engine", "garbage sidecar", "sidecar of another key", "engine only"],
)
def test_a_damaged_entry_is_removed_and_said_on_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], damage: str
) -> None:
    cache = EngineCache(tmp_path)
    cache.store(KEY, b"a whole engine", 5.0)
    engine = tmp_path / (KEY.digest() + ".engine")
    sidecar = tmp_path / (KEY.digest() + ".json")
    if damage == "truncated engine":
        engine.write_bytes(b"a whole")
    elif damage == "garbage sidecar":
        sidecar.write_text("{not json")
    elif damage == "sidecar of another key":
        other = json.loads(sidecar.read_text())
        other["key"]["precision"] = "int8"
        sidecar.write_text(json.dumps(other))
    else:
        sidecar.unlink()
    assert cache.lookup(KEY) is None
    assert not engine.exists() and not sidecar.exists()
    err = capfd.readouterr().err
    assert f"engine {KEY.digest()} removed, rebuilding: " in err
    cache.store(KEY, b"rebuilt", 6.0)  # the next build stores cleanly
    assert cache.lookup(KEY).data == b"rebuilt"


def test_an_engine_tensorrt_cannot_load_is_discarded(tmp_path: Path, capfd) -> None:
    cache = EngineCache(tmp_path)
    cache.store(KEY, b"not a plan", 5.0)
    cache.discard(KEY, "TensorRT could not deserialize it")
    assert cache.lookup(KEY) is None
    assert "could not deserialize it" in capfd.readouterr().err


def test_timing_caches_are_per_version_and_gpu(tmp_path: Path) -> None:
    cache = EngineCache(tmp_path)
    orin = cache.timing_cache_path("10.3.0", "Orin (nvgpu)", "8.7")
    assert orin == cache.timing_cache_path("10.3.0", "Orin (nvgpu)", "8.7")
    assert orin != cache.timing_cache_path("11.0.0", "Orin (nvgpu)", "8.7")
    assert orin != cache.timing_cache_path("10.3.0", "NVIDIA H200", "9.0")
    assert cache.load_timing_cache(orin) == b""
    cache.save_timing_cache(orin, b"timings")
    assert cache.load_timing_cache(orin) == b"timings"


def test_the_cache_folder_comes_from_the_options_the_environment_or_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_FOLDER, raising=False)
    assert cache_folder(TensorRTOptions()) == Path("~/.cache/edgebench/tensorrt").expanduser()
    monkeypatch.setenv(ENV_FOLDER, str(tmp_path / "env"))
    assert cache_folder(TensorRTOptions()) == tmp_path / "env"
    chosen = TensorRTOptions(engine_cache_dir=str(tmp_path / "opt"))
    assert cache_folder(chosen) == tmp_path / "opt"
    assert cache_folder(TensorRTOptions(engine_cache=False, engine_cache_dir="x")) is None


def test_file_sha256_reads_the_model_bytes(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(b"x" * (3 << 20))
    assert file_sha256(str(model)) == hashlib.sha256(b"x" * (3 << 20)).hexdigest()


def test_two_models_of_one_file_name_get_their_own_engine_folders(tmp_path: Path) -> None:
    # Every fp16 artifact is model.fp16.onnx: a re-quantized model must not find the engine
    # ONNX Runtime's TensorRT provider built for the one before it.
    first, second, copy = (tmp_path / name / "model.fp16.onnx" for name in ("a", "b", "c"))
    for path, data in ((first, b"weights one"), (second, b"weights two"), (copy, b"weights one")):
        path.parent.mkdir()
        path.write_bytes(data)
    root = str(tmp_path / "onnxruntime")
    folders = [model_cache_folder(root, str(path)) for path in (first, second, copy)]
    assert folders[0] != folders[1]
    assert folders[0] == folders[2]  # the same bytes elsewhere: the same engines
    assert all(Path(f).parent == Path(root) for f in folders)


# -- optimization profiles ---------------------------------------------------------------


def test_a_static_model_gets_its_own_shapes() -> None:
    profile = engine_profile([("input", SHAPE)])
    assert profile == {"input": {"min": SHAPE, "opt": SHAPE, "max": SHAPE}}
    assert is_fixed(profile)


def test_a_dynamic_input_waits_for_the_feeds_shape() -> None:
    model = [("input", [-1, 3, -1, -1])]
    assert engine_profile(model) is None
    profile = engine_profile(model, feed_shapes={"input": [2, 3, 160, 160]})
    assert profile["input"]["min"] == profile["input"]["max"] == [2, 3, 160, 160]
    assert covers(profile, {"input": [2, 3, 160, 160]})
    assert not covers(profile, {"input": [1, 3, 160, 160]})


def test_a_shape_profile_gives_the_ranges() -> None:
    model = [("input", [-1, 3, -1, -1]), ("scale", [1])]
    ranges = {"min": [1, 3, 128, 128], "opt": [1, 3, 224, 224], "max": [4, 3, 320, 320]}
    profile = engine_profile(model, {"input": ranges})
    assert profile["input"] == ranges and profile["scale"]["max"] == [1]
    assert not is_fixed(profile)
    assert covers(profile, {"input": [2, 3, 300, 200]})
    assert not covers(profile, {"input": [5, 3, 224, 224]})


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"other": {"min": [1], "opt": [1], "max": [1]}}, "does not have"),
        ({"input": {"min": [1, 3, 224, 224], "max": [1, 3, 224, 224]}}, "min, opt and max"),
        ({"input": {"min": [1, 3, 224], "opt": [1, 3, 224], "max": [1, 3, 224]}}, "does not fit"),
        ({"input": {"min": [1, 4, 9, 9], "opt": [1, 4, 9, 9], "max": [1, 4, 9, 9]}}, "not fit"),
        ({"input": {"min": [2, 3, 9, 9], "opt": [1, 3, 9, 9], "max": [4, 3, 9, 9]}}, "in order"),
        ({"input": {"min": [0, 3, 9, 9], "opt": [1, 3, 9, 9], "max": [4, 3, 9, 9]}}, "below 1"),
        ({"input": {"min": "big", "opt": [1, 3, 9, 9], "max": [4, 3, 9, 9]}}, "list of ints"),
    ],
)
def test_a_bad_shape_profile_is_one_line_naming_it(given: dict, words: str) -> None:
    with pytest.raises(BackendError) as caught:
        engine_profile([("input", [-1, 3, -1, -1])], given)
    assert caught.value.kind == "bad_spec" and words in caught.value.message
    assert "\n" not in caught.value.message
