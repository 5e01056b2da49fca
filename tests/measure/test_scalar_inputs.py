"""A real streaming audio model (tests/data/silero: Silero VAD, opset 15) through `edgebench run`:
a rank-0 int64 input (the sample rate), an LSTM state fed as an input, two dynamic inputs given
with --shape, and ONNX `If` control flow.

A rank-0 input must reach every framework as a rank-0 tensor (numpy's ascontiguousarray made it
1-D, which OpenVINO refuses for a `[]` input), MNN must run the control flow its Session API
cannot size (through its Module API, integer inputs as integers), and ncnn, whose converter
cannot take a scalar input, must say so in one line instead of pnnx's count of shapes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from edgebench.converters.toolchains import install_toolchain
from edgebench.runners.protocol.input_spec import InputSpec
from edgebench.runners.protocol.tensors import fit_sample, make_inputs

MODEL = Path(__file__).resolve().parents[1] / "data" / "silero" / "silero_vad_16k_op15.onnx"
SHAPES = ["--shape", "input=1,512", "--shape", "state=2,1,128"]


def voiced_input(path: Path) -> Path:
    """One 32 ms step of a voiced-sounding signal at 16 kHz (a pitch and its harmonics), the
    state the model starts from, and its sample rate as the model wants it: a 0-d int64."""
    t = np.arange(512) / 16000.0
    wave = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 8))
    np.savez(
        path,
        input=(0.3 * wave / np.abs(wave).max()).astype(np.float32)[None],
        state=np.zeros((2, 1, 128), np.float32),
        sr=np.array(16000, np.int64),
    )
    return path


def test_a_scalar_input_stays_rank_0_in_seeded_and_file_feeds() -> None:
    specs = [InputSpec("sr", [], "int64"), InputSpec("x", [1, 4], "float32")]
    seeded = make_inputs(specs, seed=0)
    assert seeded["sr"].shape == () and seeded["sr"].dtype == np.int64
    assert seeded["x"].shape == (1, 4) and seeded["x"].flags.c_contiguous
    loaded = fit_sample({"sr": np.array(8000), "x": np.ones((1, 4))}, specs, "a file")
    assert loaded["sr"].shape == () and int(loaded["sr"]) == 8000


def test_the_vad_runs_checked_on_onnxruntime_openvino_and_mnn(run_cli, eb_env, tmp_path) -> None:
    feeds = voiced_input(tmp_path / "voiced.npz")
    arrays = dict(np.load(feeds))
    session = ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
    _, state = session.run(None, arrays)
    assert state.shape == (2, 1, 128) and np.abs(state).max() > 0.01  # a state worth checking

    result = run_cli(
        [
            *("run", "--models", str(MODEL), *SHAPES, "--input", str(feeds)),
            *("--min-time", "0.2", "--frameworks", "onnxruntime,openvino,mnn", "--rounds", "1"),
        ],
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    records = [
        json.loads(line)
        for path in Path(eb_env["EDGEBENCH_RESULTS"]).glob("*/records.jsonl")
        for line in path.read_text().splitlines()
    ]
    by_framework = {r["framework"]: r for r in records}
    assert set(by_framework) == {"onnxruntime", "openvino", "mnn"}
    for framework, record in by_framework.items():
        assert record["status"] == "ok", (framework, record.get("error"))
        assert record["output_check"]["passed"], (framework, record["output_check"])
        sr = next(i for i in record["inputs"] if i["name"] == "sr")
        assert sr["shape"] == [] and sr["dtype"] == "int64"


def test_ncnn_refuses_a_scalar_input_in_one_line(run_cli) -> None:
    if install_toolchain("ncnn").state != "installed":
        pytest.skip("pnnx could not be installed (edgebench toolchains install ncnn)")
    result = run_cli(
        ["run", "--models", str(MODEL), *SHAPES, "--frameworks", "ncnn", "--min-time", "0.1"],
        timeout=600,
    )
    said = result.stdout + result.stderr
    assert "ncnn cannot take a rank-0 (scalar) input: 'sr'" in said, said
    assert "input_shape expect" not in said and "Traceback" not in said
