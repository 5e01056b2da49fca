"""Planning generative cells (planning/generative.py): the workload, the prompt every runtime
gets, the spec's ``generation`` object, and the refusals made before anything loads."""

from __future__ import annotations

import dataclasses

import pytest
from fakes.llm_models import llm_tiny_gguf  # noqa: F401  # the fixture

from edgebench.errors import UserError
from edgebench.lab.device import LocalDevice
from edgebench.planning.config import TimingConfig
from edgebench.planning.generative import (
    build_generative_cells,
    check_pairs,
    split_frameworks,
)
from edgebench.planning.generative_workload import (
    CHECK_PROMPT_TOKENS,
    GenerativeWorkload,
    prompt_ids,
)
from edgebench.planning.limits import check_memory
from edgebench.planning.modelref import ModelRef, gguf_ref
from edgebench.planning.sweep_settings import Sweep
from edgebench.runners.protocol.spec import RunSpec
from edgebench.statuses import ErrorKind, Status


def cells_for(model, workload, availability=lambda device, framework: None):
    return build_generative_cells(
        [LocalDevice()],
        [model],
        ["openvino-genai"],
        workload=workload,
        threads=[2],
        cores=["all"],
        timing=TimingConfig(),
        availability=availability,
    )


def test_the_workload_sizes_the_prompt_and_the_context():
    workload = GenerativeWorkload(prompt_tokens=(128, 512), gen_tokens=64, context_depth=256)
    assert workload.prompt_length == 512
    # The longest of: 512 + 1, 256 + 64, and the check's; plus slack.
    assert workload.context_tokens == 513 + 8
    quick = workload.correctness_only()
    assert quick.prompt_tokens == (CHECK_PROMPT_TOKENS,) and quick.repetitions == 1


def test_every_runtime_and_the_reference_get_the_same_prompt_prefix():
    ordinary = list(range(100, 150_000))
    long = prompt_ids(ordinary, 512, seed=3)
    assert prompt_ids(ordinary, CHECK_PROMPT_TOKENS, seed=3) == long[:CHECK_PROMPT_TOKENS]
    assert prompt_ids(ordinary, 512, seed=4) != long
    assert set(long) <= set(ordinary)


def test_a_generative_cell_sends_its_workload_and_prompt(llm_tiny_gguf):  # noqa: F811
    model = gguf_ref("llm-tiny", "llm-tiny", llm_tiny_gguf)
    assert model.error is None and model.precision == "f16"
    workload = GenerativeWorkload(prompt_tokens=(32, 64), gen_tokens=16)
    (cell,) = cells_for(model, workload)
    assert cell.verdict is None and cell.precision == "f16" and cell.threads == 2
    spec = cell.spec(seed=1)
    generation = spec["generation"]
    assert generation["prompt_tokens"] == [32, 64] and generation["gen_tokens"] == 16
    assert len(generation["prompt"]) == 64
    control = {t for a, b in model.llm.ordinary_ranges for t in range(a, b)}
    assert set(generation["prompt"]) <= control
    assert RunSpec.from_json(spec).generation is not None  # the runner reads it back


def test_a_workload_longer_than_the_context_fails_its_cells_in_one_line(llm_tiny_gguf):  # noqa: F811
    model = gguf_ref("llm-tiny", "llm-tiny", llm_tiny_gguf)
    limit = model.llm.context_length
    (cell,) = cells_for(model, GenerativeWorkload(prompt_tokens=(limit + 1,)))
    status, kind, reason = cell.verdict
    assert (status, kind) == (Status.FAILED, ErrorKind.BAD_SPEC)
    assert f"holds {limit} tokens" in reason and "--prompt-tokens" in reason


def test_a_model_larger_than_the_device_is_refused_from_its_file_size(llm_tiny_gguf):  # noqa: F811
    model = gguf_ref("llm-tiny", "llm-tiny", llm_tiny_gguf)
    (cell,) = cells_for(model, GenerativeWorkload())
    facts = dataclasses.replace(cell.device.facts, mem_total_kb=1024)  # 1 MiB
    small = dataclasses.replace(cell, device=dataclasses.replace(cell.device, facts=facts))
    (refused,) = check_memory([small])
    status, kind, reason = refused.verdict
    assert (status, kind) == (Status.FAILED, ErrorKind.OUT_OF_MEMORY)
    assert "--weights q4_0" in reason


def test_a_truncated_gguf_travels_as_its_model_error(tmp_path, llm_tiny_gguf):  # noqa: F811
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(llm_tiny_gguf.read_bytes()[:4000])
    model = gguf_ref("cut", str(cut), cut)
    assert model.error and "\n" not in model.error and "cut.gguf" in model.error
    (cell,) = cells_for(model, GenerativeWorkload())
    assert cell.verdict[:2] == (Status.FAILED, ErrorKind.MODEL_LOAD)


def test_frameworks_of_the_other_workload_only_are_one_line():
    tensor, generative = split_frameworks(["onnxruntime", "openvino-genai", "reference-llm"])
    assert tensor == ["onnxruntime"] and generative == ["openvino-genai", "reference-llm"]
    model = ModelRef("llm-tiny", "llm-tiny", format="gguf")  # only its name is read
    with pytest.raises(
        UserError, match=r"is a generative model, and none of --frameworks "
    ) as said:
        check_pairs([], [model], ["onnxruntime"], [], Sweep(frameworks=["onnxruntime"]))
    # never the reference
    assert str(said.value).endswith(
        "add llama.cpp or onnxruntime-genai or openvino-genai or mnn-llm or litert-lm or executorch"
    )
    check_pairs([], [model], ["onnxruntime"], [], Sweep())  # a default run: no refusal
