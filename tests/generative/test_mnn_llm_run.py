"""`edgebench run` of the built-in llm-tiny on mnn-llm end to end, at f16, q8_0 and q4_0: each
GGUF converted through the artifact cache into an MNN-LLM folder (converters/mnn_llm), measured
through the Python runner with MNN's own LLM engine, its first-step logits checked against
reference-llm (q4_0 as the file's own blocks in MNN's 4-bit form, recorded as q4_0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.llm_models import llm_tiny_gguf, llm_tiny_q4_0, llm_tiny_q8_0  # noqa: F401  # fixtures

pytest.importorskip("MNN.llm", reason="needs the mnn package (pip install 'edgebench[mnn]')")

PROMPT, GEN = 16, 8
#: The weight type asked for -> what MNN-LLM runs (edgebench_weights.json of the folder).
RAN = {"f16": "f16", "q8_0": "mnn-int8-block32", "q4_0": "q4_0"}


def test_llm_tiny_on_mnn_llm_is_converted_measured_and_checked(
    run_cli,
    eb_env,
    llm_tiny_gguf,  # noqa: F811
    llm_tiny_q8_0,  # noqa: F811
    llm_tiny_q4_0,  # noqa: F811
):
    args = "run --models llm-tiny --frameworks mnn-llm --weights f16,q8_0,q4_0 --rounds 1"
    workload = f"--prompt-tokens {PROMPT} --gen-tokens {GEN}"
    done = run_cli([*args.split(), *workload.split()], timeout=600)
    assert "llm-tiny · f16 · 1 thread · cores all — decode speed (tok/s)" in done.stdout
    (run,) = Path(eb_env["EDGEBENCH_RESULTS"]).iterdir()
    lines = (run / "records.jsonl").read_text().splitlines()
    records = {r["precision"]: r for r in map(json.loads, lines)}
    for weights, ran in RAN.items():
        record = records[weights]
        assert record["status"] == "ok", record["error"]
        assert record["generation"]["weight_type"] == ran
        assert set(record["generation"]["ttft_prompt_tokens"]) == {PROMPT}
        assert record["n_samples"] == len(record["generation"]["decode_wall_ms"]) * (GEN - 1)
        check = record["output_check"]
        assert check["passed"] and check["reference"].startswith("reference-llm"), weights
        assert check["outputs"][0]["name"] == "logits" and check["outputs"][0]["cosine"] > 0.99
