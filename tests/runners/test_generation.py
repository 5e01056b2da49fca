"""A generative cell's spec and its timing: the generation spec is checked strictly (one line per
malformed field) and round-trips; the runner's clock around ``generate`` gives one time to first
token per prefill repetition, gen_tokens - 1 gaps per decode repetition and the check material,
with telemetry around the decode repetitions only (a fake runtime that computes nothing: no
real part can call ``on_token`` in a chosen order); a cell of the wrong kind is one line."""

from __future__ import annotations

import json
from contextlib import contextmanager

import numpy as np
import pytest
from fakes.runner_process import run_runner

from edgebench.runners.backend_loader import load_backend, load_generative
from edgebench.runners.backends import GenerativeBackend
from edgebench.runners.cell import CellFacts
from edgebench.runners.generation import check_material, run_tests, timed_generate
from edgebench.runners.protocol import SPEC_SCHEMA
from edgebench.runners.protocol.errors import BackendError
from edgebench.runners.protocol.generation_spec import GenerationSpec
from edgebench.runners.protocol.result_parts import GenerationPart
from edgebench.runners.protocol.spec import RunSpec, SpecError

PROMPT = list(range(100, 164))


def generation(**changes):
    raw = {"prompt": PROMPT, "prompt_tokens": [16, 64], "gen_tokens": 5, "repetitions": 2}
    raw.update(changes)
    return raw


def raw_spec(gen, **extra):
    spec = {"schema": SPEC_SCHEMA, "model": "m.gguf", "framework": "openvino-genai"}
    spec.update(generation=gen, **extra)
    return spec


def test_the_generation_spec_round_trips_through_json():
    spec = RunSpec.from_json(raw_spec(generation(context_depth=8, check_tokens=4)))
    assert isinstance(spec.generation, GenerationSpec)
    again = RunSpec.from_json(json.loads(json.dumps(spec.to_json())))
    assert again == spec
    assert again.generation.prompt_tokens == [16, 64] and again.generation.context_depth == 8
    assert RunSpec.from_json(raw_spec(None)).generation is None


@pytest.mark.parametrize(
    "changes, named",
    [
        ({"gen_tokens": 0}, "'generation.gen_tokens' must be an integer from 1 to 1048576, not 0"),
        ({"gen_tokens": True}, "'generation.gen_tokens' must be an integer"),
        ({"gen_tokens": 1 << 21}, "'generation.gen_tokens' must be an integer from 1"),
        ({"repetitions": 0}, "'generation.repetitions' must be an integer from 1"),
        ({"warmup": -1}, "'generation.warmup' must be an integer from 0"),
        ({"context_depth": "8"}, "'generation.context_depth' must be an integer"),
        ({"prompt": [5, -1]}, "'generation.prompt[1]' must be an integer from 0"),
        ({"prompt": "hello"}, "'generation.prompt' must be a non-empty list of integers"),
        ({"prompt": []}, "'generation.prompt' must be a non-empty list of integers"),
        ({"prompt_tokens": [16, 0]}, "'generation.prompt_tokens[1]' must be an integer from 1"),
        ({"prompt_tokens": [65]}, "'generation.prompt' has 64 tokens; the tests feed up to 65"),
        ({"context_depth": 70}, "'generation.prompt' has 64 tokens; the tests feed up to 70"),
        ({"context_tokens": 40}, "'generation.context_tokens' is 40, but the tests hold up to 65"),
    ],
)
def test_a_malformed_generation_field_is_one_line_naming_it(changes, named):
    with pytest.raises(SpecError) as caught:
        RunSpec.from_json(raw_spec(generation(**changes)))
    assert named in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_generation_that_is_no_object_or_has_no_prompt_is_refused():
    with pytest.raises(SpecError, match="'generation' must be an object or null"):
        RunSpec.from_json(raw_spec(3))
    with pytest.raises(SpecError, match=r"'generation\.prompt' is missing"):
        RunSpec.from_json(raw_spec({"gen_tokens": 4}))


def test_the_context_defaults_to_the_most_a_test_holds_plus_slack():
    gen = GenerationSpec.from_json(generation(context_depth=32, gen_tokens=40))
    assert gen.context_needed() == 32 + 40  # the decode test holds the most
    assert gen.context() == 32 + 40 + 8
    assert GenerationSpec.from_json(generation(context_tokens=500)).context() == 500


class CountingRuntime(GenerativeBackend):
    """Produces each token at once (token i after prompt p: p[-1] + i), logging every call."""

    name = "counting"

    def __init__(self, log, extra_tokens=0, logits=None):
        self.log = log
        self.extra_tokens = extra_tokens
        self.logits = logits

    def generate(self, prompt, new_tokens, on_token):
        self.log.append(("generate", len(prompt), new_tokens))
        for i in range(new_tokens + self.extra_tokens):
            on_token(prompt[-1] + i)

    def first_logits(self, prompt):
        return self.logits


@contextmanager
def logged(log, name):
    log.append(("enter", name))
    yield
    log.append(("exit", name))


def test_the_runner_times_each_test_inside_the_telemetry_window_and_keeps_their_spans():
    log = []
    gen = GenerationSpec.from_json(generation(warmup=1, context_depth=8))
    part = GenerationPart("f16", gen.gen_tokens, gen.context_depth)
    facts = CellFacts(generation=part)
    run_tests(CountingRuntime(log), gen, part, facts, [logged(log, "telemetry")])

    expected = [("enter", "telemetry")]
    expected += [("generate", 16, 1)] * 3 + [("generate", 64, 1)] * 3
    expected += [("generate", 8, 5)] * 3  # the decode test's warm-up and its two repetitions
    expected += [("exit", "telemetry")]
    assert log == expected
    # one span per timed repetition, in order: prefill start to first token, decode first
    # token to last (the host integrates energy over them)
    prefill_spans, decode_spans = part.prefill_spans_ns, part.decode_spans_ns
    assert len(prefill_spans) == 4 and len(decode_spans) == 2
    ttfts = [ns for p in part.prefill for ns in p.ttft_ns]
    assert [end - start for start, end in prefill_spans] == ttfts
    assert [end - start for start, end in decode_spans] == part.decode_wall_ns
    flat = [t for span in prefill_spans + decode_spans for t in span]
    assert flat == sorted(flat)
    assert [p.prompt_tokens for p in part.prefill] == [16, 64]
    assert all(len(p.ttft_ns) == 2 and min(p.ttft_ns) >= 0 for p in part.prefill)
    timing = facts.window.timing
    assert len(timing["samples_ns"]) == 2 * (5 - 1)  # gen_tokens - 1 gaps per repetition
    assert len(part.decode_wall_ns) == 2
    assert sum(timing["samples_ns"]) == sum(part.decode_wall_ns) == timing["measure_wall_ns"]
    assert isinstance(timing["cpu_ns_per_inference"], int)


def test_one_decode_token_gives_no_gaps_and_no_cpu_per_token():
    gen = GenerationSpec.from_json(generation(gen_tokens=1, warmup=0))
    part = GenerationPart("f16", 1, 0)
    facts = CellFacts(generation=part)
    run_tests(CountingRuntime([]), gen, part, facts, [])
    assert facts.window.timing["samples_ns"] == [] and part.decode_wall_ns == [0, 0]
    assert facts.window.timing["cpu_ns_per_inference"] is None


def test_a_runtime_that_produces_another_number_of_tokens_is_an_inference_error():
    with pytest.raises(BackendError) as caught:
        timed_generate(CountingRuntime([], extra_tokens=2), PROMPT[:4], 3)
    assert caught.value.kind == "inference"
    assert caught.value.message.startswith("counting produced 5 tokens where 3 were asked")


def test_the_stamps_follow_the_tokens_in_order():
    run = timed_generate(CountingRuntime([]), PROMPT[:4], 4)
    assert run.tokens == [103, 104, 105, 106]
    assert run.stamps_ns == sorted(run.stamps_ns) and run.stamps_ns[0] >= run.t0_ns
    assert len(run.gaps_ns()) == 3 and len(run.cpu_ns) == 2


@pytest.mark.parametrize("logits", [None, np.arange(6, dtype=np.float64).reshape(2, 3)])
def test_the_check_material_is_saved_as_tokens_and_logits_where_given(tmp_path, logits):
    gen = GenerationSpec.from_json(generation(check_prompt=10, check_tokens=3))
    part = GenerationPart("f16", 5, 0)
    facts = CellFacts(generation=part)
    path = tmp_path / "out" / "check"  # no .npz: saved under the name as given
    check_material(CountingRuntime([], logits=logits), gen, part, str(path), facts)
    assert part.check_tokens == [109, 110, 111] and facts.outputs_file == str(path)
    with np.load(path) as saved:
        assert saved["tokens"].dtype == np.int64 and list(saved["tokens"]) == [109, 110, 111]
        if logits is None:
            assert "logits" not in saved.files
        else:
            assert saved["logits"].dtype == np.float32 and saved["logits"].shape == (6,)


def test_a_cell_of_the_wrong_kind_for_its_framework_is_one_line():
    with pytest.raises(BackendError) as cnn:
        load_backend("openvino-genai")
    assert cnn.value.kind == "bad_spec"
    assert cnn.value.message.startswith("openvino-genai runs generative models only")
    with pytest.raises(BackendError) as generative:
        load_generative("onnxruntime")
    assert generative.value.kind == "bad_spec"
    assert "onnxruntime runs no generative models" in generative.value.message
    assert "openvino-genai" in generative.value.message
    with pytest.raises(BackendError) as accelerator:
        load_generative("openvino-genai", "vulkan")
    assert accelerator.value.kind == "unsupported"


def test_the_runner_refuses_gen_tokens_0_and_a_cnn_cell_on_a_generative_runtime():
    result = run_runner(raw_spec(generation(gen_tokens=0)))
    assert result["status"] == "failed" and result["error"]["kind"] == "bad_spec"
    assert "'generation.gen_tokens' must be an integer from 1" in result["error"]["message"]
    cnn = run_runner({"schema": SPEC_SCHEMA, "model": "m.onnx", "framework": "openvino-genai"})
    assert cnn["error"]["kind"] == "bad_spec"
    assert cnn["error"]["message"].startswith("openvino-genai runs generative models only")
