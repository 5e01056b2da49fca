"""`edgebench run` of the built-in llm-tiny on onnxruntime-genai end to end: the GGUF converted
through the artifact cache into an ONNX Runtime GenAI folder, measured through the Python
runner, its first-step logits checked against reference-llm."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.llm_models import llm_tiny_gguf  # noqa: F401  # the fixture

pytest.importorskip(
    "onnxruntime_genai",
    reason="needs onnxruntime-genai (pip install 'edgebench[onnxruntime-genai]')",
)

PROMPT, GEN = 16, 8
RUN = "run --models llm-tiny --frameworks onnxruntime-genai --rounds 1"


def test_llm_tiny_on_onnxruntime_genai_is_converted_measured_and_checked(
    run_cli,
    eb_env,
    llm_tiny_gguf,  # noqa: F811
):
    workload = ["--prompt-tokens", str(PROMPT), "--gen-tokens", str(GEN)]
    done = run_cli([*RUN.split(), *workload], timeout=600)
    assert done.returncode == 0, done.stderr
    assert "llm-tiny · f16 · 1 thread · cores all — decode speed (tok/s)" in done.stdout
    assert "onnxruntime-genai" in done.stdout
    (run,) = Path(eb_env["EDGEBENCH_RESULTS"]).iterdir()
    (record,) = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    assert record["status"] == "ok", record["error"]
    generation = record["generation"]
    assert generation["weight_type"] == "f16-as-f32"
    assert set(generation["ttft_prompt_tokens"]) == {PROMPT}
    assert record["n_samples"] == len(generation["decode_wall_ms"]) * (GEN - 1)
    check = record["output_check"]
    assert check["passed"] and check["reference"].startswith("reference-llm")
    assert check["outputs"][0]["name"] == "logits" and check["outputs"][0]["cosine"] > 0.995
