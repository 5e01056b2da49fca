"""Which optimization profile each TensorRT execution context uses, decided without TensorRT:
on a dynamic-shape network every context in concurrent use has a profile of its own
(NvInferRuntime.h, IExecutionContext), and the engine is built with that many."""

from __future__ import annotations

import pytest

from edgebench.runners.backends.trt_profile import context_profiles

DYNAMIC = [("input", [-1, 3, 224, 224])]
STATIC = [("input", [1, 3, 224, 224])]


@pytest.mark.parametrize("streams", [2, 3, 8])
def test_concurrent_contexts_on_a_dynamic_network_each_have_their_own_profile(streams: int):
    plan = context_profiles(DYNAMIC, streams)
    assert plan == list(range(streams))
    assert max(plan) + 1 == streams  # profiles the engine is built with


def test_one_dynamic_input_among_static_ones_makes_the_engine_dynamic():
    model = [("image", [1, 3, 224, 224]), ("scale", [-1])]
    assert context_profiles(model, 4) == [0, 1, 2, 3]


def test_contexts_on_a_static_network_share_its_one_profile():
    assert context_profiles(STATIC, 4) == [0, 0, 0, 0]


def test_one_stream_needs_one_profile():
    assert context_profiles(DYNAMIC, 1) == [0]
    assert context_profiles(DYNAMIC, 0) == [0]
