"""`edgebench run` on a generative model end to end: the built-in llm-tiny on OpenVINO GenAI
through the Python runner, its first token checked against reference-llm, a generative matrix
printed and stored; and the bad input a generative run refuses in one line."""

from __future__ import annotations

import json

import pytest
from fakes.llm_models import llm_tiny_gguf  # noqa: F401  # the fixture

pytest.importorskip(
    "openvino_genai", reason="needs openvino-genai (pip install 'edgebench[openvino-genai]')"
)

PROMPTS, GEN = (16, 32), 8


def stored_records(eb_env):
    from pathlib import Path

    (run,) = Path(eb_env["EDGEBENCH_RESULTS"]).iterdir()
    return [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]


def test_llm_tiny_on_openvino_genai_prints_a_checked_generative_matrix(
    run_cli,
    eb_env,
    llm_tiny_gguf,  # noqa: F811
):
    done = run_cli(
        [
            "run",
            "--models", "llm-tiny",
            "--frameworks", "openvino-genai",
            "--prompt-tokens", ",".join(map(str, PROMPTS)),
            "--gen-tokens", str(GEN),
            "--rounds", "1",
        ],
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "llm-tiny · f16 · 1 thread · cores all — decode speed (tok/s)" in done.stdout
    assert "openvino-genai" in done.stdout and "tg8" in done.stdout
    (record,) = stored_records(eb_env)
    assert record["status"] == "ok", record["error"]
    generation = record["generation"]
    assert sorted(set(generation["ttft_prompt_tokens"])) == list(PROMPTS)
    repetitions = len(generation["decode_wall_ms"])
    assert repetitions >= 1 and record["n_samples"] == repetitions * (GEN - 1)
    assert record["throughput_ips"] > 0 and record["peak_rss_mb"] > 0
    check = record["output_check"]
    assert check["passed"] and check["reference"].startswith("reference-llm")
    assert [o["name"] for o in check["outputs"]][-1] == "tokens"
    assert check["outputs"][-1]["top1_agreement"] > 0


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--gen-tokens", "0"], "--gen-tokens"),
        (["--frameworks", "onnxruntime"], "llm-tiny is a generative model, and none of"),
        (["--prompt-tokens", "0"], "--prompt-tokens"),
    ],
)
def test_bad_generative_settings_are_one_line(run_cli, llm_tiny_gguf, args, said):  # noqa: F811
    done = run_cli(["run", "--models", "llm-tiny", *args])
    assert done.returncode == 2
    assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_a_hostile_gguf_fails_its_cells_in_one_line_and_others_still_run(
    run_cli,
    eb_env,
    tmp_path,
    llm_tiny_gguf,  # noqa: F811
):
    hostile = tmp_path / "hostile.gguf"
    data = bytearray(llm_tiny_gguf.read_bytes()[:4096])
    data[16:24] = (2**62).to_bytes(8, "little")  # a metadata count far past the file
    hostile.write_bytes(bytes(data))
    done = run_cli(["run", "--models", str(hostile), "--frameworks", "reference-llm"])
    assert done.returncode == 1, done.stderr
    (record,) = stored_records(eb_env)
    assert record["status"] == "failed" and record["error_kind"] == "model_load"
    assert "hostile.gguf" in record["error"] and "\n" not in record["error"]
    assert "Traceback" not in done.stderr + done.stdout
