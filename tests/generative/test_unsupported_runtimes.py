"""LiteRT-LM and ExecuTorch are generative frameworks that edgebench cannot measure here (no
.litertlm or .pte model can be made without torch): each is one folder found by listing, and a
run naming them prints the generative matrix with their cells ``unsupported`` and the reason in
one line, beside a runtime that runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.llm_models import llm_tiny_gguf  # noqa: F401  # the fixture

from edgebench import frameworks
from edgebench.frameworks import folder_name
from edgebench.runners.backend_loader import load_generative
from edgebench.runners.backends import discover
from edgebench.runners.protocol.errors import BackendError

#: framework -> what its one-line reason must name (the model file it runs, why none is made).
DECLARED = {"litert-lm": (".litertlm", "torch"), "executorch": (".pte", "torch")}


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_the_framework_is_a_generative_folder_found_by_listing(name):
    framework = frameworks.find_framework(name)
    assert framework is not None and framework.workload == "generative"
    folder = Path(frameworks.__file__).parent / folder_name(name)
    assert (folder / "__init__.py").is_file()
    declared = discover()[0][name]
    assert declared.module == framework.backend and declared.generative
    assert name in frameworks.default_frameworks()  # not a reference: a plain run lists it


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_the_runner_refuses_it_as_unsupported_in_one_line(name):
    with pytest.raises(BackendError) as refused:
        load_generative(name)
    assert refused.value.kind == "unsupported"
    message = refused.value.message
    assert "\n" not in message and all(word in message for word in DECLARED[name])
    assert "not accepted yet" in message


def test_a_run_naming_them_prints_the_matrix_with_their_reasons(
    run_cli,
    eb_env,
    llm_tiny_gguf,  # noqa: F811
):
    pytest.importorskip("llama_cpp", reason="needs llama.cpp (pip install 'edgebench[llama-cpp]')")
    done = run_cli(
        [
            "run",
            "--models", "llm-tiny",
            "--frameworks", "litert-lm,executorch,llama.cpp",
            "--prompt-tokens", "16",
            "--gen-tokens", "8",
            "--rounds", "1",
        ],
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stdout.splitlines()
    title = lines.index(
        next(line for line in lines if line.startswith("llm-tiny · f16") and "decode speed" in line)
    )
    header, _, row = lines[title + 1 : title + 4]
    assert header.split() == ["device", "llama.cpp", "litert-lm", "executorch"]
    assert row.split()[0] == "local" and row.split()[2:] == ["unsupported", "unsupported"]
    float(row.split()[1])  # llama.cpp's decode speed, a number

    (run,) = Path(eb_env["EDGEBENCH_RESULTS"]).iterdir()
    records = {
        r["framework"]: r for r in map(json.loads, (run / "records.jsonl").read_text().splitlines())
    }
    assert records["llama.cpp"]["status"] == "ok", records["llama.cpp"]["error"]
    for name, words in DECLARED.items():
        record = records[name]
        assert (record["status"], record["error_kind"]) == ("unsupported", "unsupported")
        assert "\n" not in record["error"] and all(word in record["error"] for word in words)
        assert any(line.strip().startswith(f"local/llm-tiny/{name}: ") for line in lines)
