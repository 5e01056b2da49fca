"""edgebench-native (runners/native_runner/) built for this x86_64 host, measured against the
Python runner on the same ncnn cell: the same seeded input bytes, the same outputs, the
sample counts the spec asks for, and the Python runner's error kinds for bad input."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from fakes.environment import REPO
from fakes.native_builds import convert_builtin, run_native
from fakes.runner_process import run_runner

from edgebench.builds.native_runner import BuiltRunner
from edgebench.runners import protocol
from edgebench.runners.protocol.tensors import INPUT_GENERATOR, seeded_values

NATIVE_SOURCES = REPO / "runners" / "native_runner"


@pytest.fixture(scope="module")
def ncnn_mobilenet(tmp_path_factory: pytest.TempPathFactory, shared_models: Path) -> Path:
    """mobilenetv2 converted to ncnn by `edgebench convert` (the real pnnx toolchain)."""
    return convert_builtin("mobilenetv2", "ncnn", tmp_path_factory.mktemp("cache"), shared_models)


def _spec(model: Path, **changes: object) -> dict:
    spec = {
        "schema": protocol.SPEC_SCHEMA,
        "model": str(model),
        "framework": "ncnn",
        "threads": 1,
        "warmup": 2,
        "iterations": 5,
        "min_time_s": 0,
        "seed": 11,
    }
    spec.update(changes)
    return spec


def test_protocol_names_are_the_python_runners() -> None:
    """protocol.h spells the schema names and the result prefix itself: they must not drift."""
    text = (NATIVE_SOURCES / "protocol.h").read_text()
    for constant, value in {
        "kSpecSchema": protocol.SPEC_SCHEMA,
        "kResultSchema": protocol.RESULT_SCHEMA,
        "kProbeSchema": protocol.PROBE_SCHEMA,
        "kResultPrefix": protocol.RESULT_PREFIX,
    }.items():
        assert f'{constant} = "{value}"' in text, constant
    assert f'"{INPUT_GENERATOR}"' in (NATIVE_SOURCES / "seeded.h").read_text()
    kinds = set(
        re.findall(
            r'BackendError\("(\w+)"', "".join(p.read_text() for p in NATIVE_SOURCES.rglob("*.cpp"))
        )
    )
    assert kinds and kinds <= set(protocol.ERROR_KINDS), kinds - set(protocol.ERROR_KINDS)


@pytest.mark.parametrize(
    ("seed", "name", "shape", "dtype"),
    [
        (0, "input", [1, 3, 224, 224], "float32"),
        (11, "images", [2, 3, 17, 5], "float32"),
        (2**40 + 7, "x/é:入力", [1, 1000], "float32"),
        (3, "token_ids", [4, 33], "int64"),
    ],
)
def test_seeded_inputs_are_bit_identical(
    native_x86: BuiltRunner, tmp_path: Path, seed: int, name: str, shape: list[int], dtype: str
) -> None:
    out = tmp_path / "input.bin"
    dims = "x".join(str(d) for d in shape)
    subprocess.run(
        [str(native_x86.path), "--seeded-input", str(seed), name, dtype, dims, str(out)],
        check=True,
        timeout=60,
    )
    expected = seeded_values(seed, name, shape, dtype)
    assert out.read_bytes() == expected.tobytes()
    if dtype == "float32":  # and the values look like the standard normal they stand for
        assert abs(float(expected.mean())) < 0.05 and 0.9 < float(expected.std()) < 1.1


def test_same_cell_as_the_python_runner(
    native_x86: BuiltRunner, ncnn_mobilenet: Path, tmp_path: Path
) -> None:
    native = run_native(
        native_x86.path, _spec(ncnn_mobilenet, save_outputs=str(tmp_path / "n" / "out.npz"))
    )
    python = run_runner(_spec(ncnn_mobilenet, save_outputs=str(tmp_path / "p.npz")))
    assert native["status"] == "ok", native["error"]
    assert python["status"] == "ok", python["error"]
    assert native["schema"] == protocol.RESULT_SCHEMA and native["runner"] == "edgebench-native"
    assert native["python"] is None and native["input_generator"] == INPUT_GENERATOR
    assert native["inputs"] == python["inputs"]
    assert len(native["samples_ns"]) == 5 and len(native["warmup_samples_ns"]) == 2
    assert native["stop_reason"] == "target_reached"
    assert all(s > 0 for s in native["samples_ns"])
    assert native["peak_rss_kb"] > native["rss_before_load_kb"] > 0
    assert native["load_ns"] > 0 and native["first_inference_ns"] > 0
    with np.load(tmp_path / "n" / "out.npz") as ours, np.load(tmp_path / "p.npz") as theirs:
        assert list(ours["__names__"]) == list(theirs["__names__"]) == ["output"]
        assert ours["output_0"].shape == theirs["output_0"].shape == (1, 1000)
        np.testing.assert_allclose(ours["output_0"], theirs["output_0"], rtol=0, atol=1e-5)
    assert native["outputs"][0]["top5"] == python["outputs"][0]["top5"]
    assert native["outputs"][0]["shape"] == [1, 1000]


def test_stop_rules_concurrency_and_pinning(native_x86: BuiltRunner, ncnn_mobilenet: Path) -> None:
    capped = run_native(native_x86.path, _spec(ncnn_mobilenet, iterations=50, max_iterations=3))
    assert capped["status"] == "ok" and len(capped["samples_ns"]) == 3
    assert capped["stop_reason"] == "max_iterations"
    streams = run_native(native_x86.path, _spec(ncnn_mobilenet, concurrency=2, iterations=6))
    assert streams["status"] == "ok", streams["error"]
    counts = streams["per_stream_counts"]
    assert len(counts) == 2 and sum(counts) == len(streams["samples_ns"]) >= 6
    assert len(streams["warmup_samples_ns"]) == 4  # two per stream
    ci = run_native(native_x86.path, _spec(ncnn_mobilenet, target_ci=0.5, iterations=3))
    assert ci["status"] == "ok" and 0 <= ci["median_ci"] < 10
    last = max(os.sched_getaffinity(0))
    pinned = run_native(native_x86.path, _spec(ncnn_mobilenet, cores=[last], iterations=2))
    assert pinned["cores_effective"] == [last]


def test_an_inputs_file_is_fed_as_it_is(
    native_x86: BuiltRunner, ncnn_mobilenet: Path, tmp_path: Path
) -> None:
    image = np.linspace(-1, 1, 3 * 224 * 224, dtype=np.float32).reshape(1, 3, 224, 224)
    np.savez(tmp_path / "inputs.npz", input=image)
    spec = _spec(ncnn_mobilenet, input_file=str(tmp_path / "inputs.npz"))
    native = run_native(native_x86.path, {**spec, "save_outputs": str(tmp_path / "n.npz")})
    python = run_runner({**spec, "save_outputs": str(tmp_path / "p.npz")})
    assert python["status"] == "ok", python["error"]
    assert native["status"] == "ok", native["error"]
    assert native["inputs"][0]["source"] == "file"
    with np.load(tmp_path / "n.npz") as ours, np.load(tmp_path / "p.npz") as theirs:
        np.testing.assert_allclose(ours["output_0"], theirs["output_0"], rtol=0, atol=1e-5)
    seeded = run_native(native_x86.path, _spec(ncnn_mobilenet))
    assert seeded["outputs"][0]["sample"] != native["outputs"][0]["sample"]


def test_bad_input_gets_the_python_runners_error_kinds(
    native_x86: BuiltRunner, ncnn_mobilenet: Path, tmp_path: Path
) -> None:
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "io.json").write_bytes((ncnn_mobilenet.parent / "io.json").read_bytes())
    (corrupt / "model.param").write_bytes(b"7767517\n\xff\xfe not a layer list\n" * 4)
    cases = {
        "missing": (_spec(tmp_path / "nowhere" / "model.param"), "model_load", "not found"),
        "corrupt": (_spec(corrupt / "model.param"), "model_load", "could not parse"),
        "schema": ({**_spec(ncnn_mobilenet), "schema": "other/9"}, "bad_spec", "schema"),
        "threads": (_spec(ncnn_mobilenet, threads=0), "bad_spec", ">= 1"),
        "input": (
            _spec(ncnn_mobilenet, inputs=[{"name": "nope", "shape": [1]}]),
            "bad_spec",
            "not an input of the model",
        ),
        "framework": (_spec(ncnn_mobilenet, framework="openvino"), "not_installed", "it has: "),
        "precision": (_spec(ncnn_mobilenet, precision="int4"), "unsupported", "int4"),
    }
    for case, (spec, kind, words) in cases.items():
        result = run_native(native_x86.path, spec)
        assert result["status"] in ("failed", "unsupported"), case
        assert result["error"]["kind"] == kind, (case, result["error"])
        assert words in result["error"]["message"], (case, result["error"])
    garbage = run_native(native_x86.path, '{"schema": "edgebench.spec/1", "model": ')
    assert (
        garbage["error"]["kind"] == "bad_spec" and "cannot read spec" in garbage["error"]["message"]
    )


def test_probe_names_the_frameworks_built_in(native_x86: BuiltRunner) -> None:
    proc = subprocess.run(
        [str(native_x86.path), "--probe"], capture_output=True, text=True, timeout=60
    )
    probe = json.loads(proc.stdout.strip().split(" ", 1)[1])
    assert probe["schema"] == protocol.PROBE_SCHEMA and probe["python"] is None
    assert probe["machine"] == "x86_64" and probe["emulated"] is False
    ncnn = probe["frameworks"]["ncnn"]
    assert ncnn["available"] and ncnn["version"] == native_x86.frameworks["ncnn"]
    assert set(probe["frameworks"]) == set(native_x86.frameworks)
