"""Cells built from real per-iteration timings: a small ONNX Runtime run on this machine,
resampled (seeded) to the median, spread and sample count a test needs.

The real timings give the samples their shape (skew, ties, a tail); the resampling only moves
and stretches it, so a test can build a case (a quiet cell, a noisy one) that holds whatever
the machine's load was when the timings were taken."""

from __future__ import annotations

import functools
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgebench.analysis.metrics import get_metric
from edgebench.analysis.ranking import separate
from edgebench.results.records import Record
from fakes.models import save_conv_model
from fakes.records import record_of_samples

#: Real timings taken once per test session.
REAL_ITERATIONS = 400
#: Spreads tried, in order, for the noisy cell of ``noisy_tie_case``: how wide its real
#: timings must be stretched for 30 samples to hide a 10% gap depends a little on the shape of
#: the real run's core.
NOISY_SPREADS = (0.4, 0.6, 0.8)
#: The draws tried at each spread (15 loaded sessions needed at most the fourth).
NOISY_SEEDS = tuple(range(32, 48))
#: The spread of a resampled cell is measured on the middle 30% of the real timings (the
#: order statistics that bound a median), in units of a normal's: 0.65 - 0.35 quantiles.
MIDDLE = (0.35, 0.65)
MIDDLE_WIDTH = 0.7706
#: Resampled log-deviations are clipped at this many such units, so that a stray pause of the
#: real run stretched to a 40% spread neither overflows nor flattens a chart's scale.
CLIP = 5.0


@functools.cache
def real_samples_ms() -> np.ndarray:
    """``REAL_ITERATIONS`` per-iteration times (ms) of ONNX Runtime on a small conv model."""
    ort = pytest.importorskip("onnxruntime")
    with tempfile.TemporaryDirectory() as tmp:
        model = save_conv_model(Path(tmp) / "conv.onnx", [1, 3, 32, 32])
        session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        feed = {session.get_inputs()[0].name: np.ones((1, 3, 32, 32), np.float32)}
        session.run(None, feed)  # warm-up, as a runner does
        times = []
        for _ in range(REAL_ITERATIONS):
            start = time.perf_counter_ns()
            session.run(None, feed)
            times.append(time.perf_counter_ns() - start)
    return np.asarray(times, dtype=np.float64) / 1e6


def resampled_ms(median_ms: float, spread: float, n: int, seed: int) -> np.ndarray:
    """``n`` real timings drawn with replacement (seeded), their log-deviations from the real
    median scaled so that the middle of the real run spreads like a lognormal of ``spread``
    (about the CV), then scaled so that their median is ``median_ms`` exactly."""
    logs = np.log(real_samples_ms())
    centre = float(np.median(logs))
    low, high = np.quantile(logs, MIDDLE)
    scale = float(high - low) / MIDDLE_WIDTH or float(logs.std())
    assert scale > 0, "the real timings are all equal: nothing to resample"
    drawn = np.random.default_rng(seed).choice(logs, n)
    z = np.clip((drawn - centre) / scale, -CLIP, CLIP)
    samples = np.exp(spread * z)
    return samples * (median_ms / float(np.median(samples)))


def real_cell(
    framework: str,
    median_ms: float,
    spread: float,
    n: int,
    seed: int,
    *,
    device: str = "dev",
    **fields: Any,
) -> Record:
    """An ok fp32 cell whose samples are ``resampled_ms`` and statistics computed from them."""
    samples = [int(v * 1e6) for v in resampled_ms(median_ms, spread, n, seed)]
    return record_of_samples(device, framework, samples, **fields)


def noisy_tie_case(device: str = "dev") -> dict[str, Record]:
    """The ranking's old contradiction, from real timings: ``a`` quiet at 100 ms, ``c`` quiet at
    106 ms (clearly behind ``a``), ``b`` noisy at 110 ms on 30 samples (cannot be told from
    ``a``: stretched to the first of ``NOISY_SPREADS`` that hides it)."""
    p50 = get_metric("p50")
    a = real_cell("a", 100, 0.01, 300, seed=31, device=device)
    c = real_cell("c", 106, 0.01, 300, seed=33, device=device)
    # Stretching alone does not always hide the gap: on a loaded machine the real timings can
    # fall in tight clusters, and 30 draws whose middle order statistics all come from one
    # cluster bound the median closely whatever the stretch (1 run in 6 under two CPU hogs).
    # Other draws (seeds) of the same timings do not.
    for spread in NOISY_SPREADS:
        for seed in NOISY_SEEDS:
            b = real_cell("b", 110, spread, 30, seed=seed, device=device)
            if not separate(a, b, p50).separated:
                return {"a": a, "b": b, "c": c}
    raise AssertionError(f"30 real samples stretched to {NOISY_SPREADS[-1]} still separate")
