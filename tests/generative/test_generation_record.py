"""A generative record's ``generation`` part: its figures, its pooling over rounds and its
round trip through the store's JSON (results/generation_part.py)."""

import pytest
from fakes.records import record_of_samples

from edgebench.analysis.metrics import get_metric
from edgebench.results.generation_part import Generation
from edgebench.results.records import Record, merged_parts


def part(**fields):
    values = dict(
        weight_type="q8_0",
        ttft_prompt_tokens=[128, 128, 128, 512, 512, 512],
        ttft_ms=[10.0, 12.0, 11.0, 50.0, 40.0, 45.0],
        gen_tokens=65,
        context_depth=0,
        decode_wall_ms=[640.0, 650.0, 660.0],
    )
    values.update(fields)
    return Generation(**values)


def record(generation):
    return record_of_samples("local", "llama.cpp", [1_000_000] * 8, generation=generation)


def test_prefill_and_decode_come_from_the_medians_of_their_repetitions():
    g = part()
    assert g.prompt_lengths == [128, 512]
    assert g.ttft_p50_ms(128) == 11.0
    assert g.ttft_p50_ms() == 45.0  # the longest prompt by default
    assert g.prefill_tokens_per_s(128) == pytest.approx(128 / 0.011)
    assert g.prefill_tokens_per_s() == pytest.approx(512 / 0.045)
    # 64 tokens after the first, over the median wall (650 ms).
    assert g.decode_tokens_per_s == pytest.approx(64 / 0.650)
    assert "pp512" in g.describe() and "tg65" in g.describe()


def test_one_generated_token_has_no_decode_rate():
    assert part(gen_tokens=1, decode_wall_ms=[0.0]).decode_tokens_per_s is None
    assert part(ttft_prompt_tokens=[], ttft_ms=[]).prefill_tokens_per_s() is None


def test_the_metrics_read_the_part_with_their_directions():
    r = record(part())
    assert get_metric("decode").value(r) == pytest.approx(64 / 0.650)
    assert get_metric("prefill").value(r) == pytest.approx(512 / 0.045)
    assert get_metric("ttft").value(r) == 45.0
    assert not get_metric("decode").lower_is_better and get_metric("ttft").lower_is_better
    plain = record(None)
    assert get_metric("decode").value(plain) is None


def test_rounds_pool_their_repetitions():
    first = record(part(ttft_prompt_tokens=[128], ttft_ms=[10.0], decode_wall_ms=[600.0]))
    second = record(part(ttft_prompt_tokens=[128], ttft_ms=[14.0], decode_wall_ms=[700.0]))
    pooled = merged_parts([first, second])["generation"]
    assert pooled.ttft_ms == [10.0, 14.0] and pooled.decode_wall_ms == [600.0, 700.0]
    assert pooled.ttft_p50_ms(128) == 12.0


def test_the_part_reads_back_as_stored():
    r = record(part(kv_cache_bytes=4096, check_tokens=[5, 6, 7]))
    again = Record.from_dict(r.to_dict())
    assert again.generation == r.generation
    assert again.to_dict()["generation"]["kv_cache_bytes"] == 4096


def runner_part():
    from edgebench.runners.protocol.result_parts import GenerationPart, PrefillRun

    part = GenerationPart("f16", gen_tokens=5, context_depth=0)
    part.prefill = [PrefillRun(100, [1_000_000])]
    part.prefill_spans_ns = [[10_000_000, 11_000_000]]
    part.decode_wall_ns = [4_000_000, 4_000_000]
    part.decode_spans_ns = [[20_000_000, 24_000_000], [30_000_000, 34_000_000]]
    return part


def counter_trace(kind="rapl"):
    """A counter at 3 W over 0..50 ms, sampled each ms, after an idle baseline of 1 W."""
    times = list(range(0, 50_000_001, 1_000_000))
    return {
        "source": {"kind": kind},
        "t_perf_ns": times,
        "energy_j": [3.0 * t / 1e9 for t in times],
        "baseline": {"power_w": 1.0},
        "marks": {"window_start": 0, "window_end": 50_000_000},
    }


def test_energy_per_token_is_the_active_energy_over_each_tests_spans():
    from edgebench.measure.generation_record import generation_of

    g = generation_of(runner_part(), counter_trace())
    # 2 W above idle: 1 ms over 100 prompt tokens; 2 x 4 ms over 2 x 4 decoded tokens
    assert g.energy_mj_per_prefill_token == pytest.approx(2.0 * 1.0 / 100)
    assert g.energy_mj_per_decode_token == pytest.approx(2.0 * 8.0 / 8)
    assert "2 mJ/decoded token" in g.describe()
    for trace in (None, counter_trace(kind="none")):
        g = generation_of(runner_part(), trace)
        assert g.energy_mj_per_prefill_token is None and g.energy_mj_per_decode_token is None


def test_too_few_per_token_samples_advise_more_tokens_not_iterations():
    from edgebench.measure.scheduler import merge_rounds

    # two rounds of 8 per-token samples each: too few for a tail
    pooled = merge_rounds([record(part()), record(part())])
    (few,) = [w for w in pooled.warnings if w.kind.startswith("few_")]
    assert few.kind == "few_token_samples" and few.figures == {"samples": 16}
    assert few.message == (
        "only 16 per-token samples: p99 is not a real tail (raise --gen-tokens or --rounds)"
    )
    assert "--iterations" not in few.message and "inferences" not in few.message
    tensor = merge_rounds([record_of_samples("local", "onnxruntime", [1_000_000] * 8)] * 2)
    assert [w.kind for w in tensor.warnings if w.kind.startswith("few_")] == ["few_samples"]
