"""Compare two runs cell by cell: significance (Mann-Whitney U) plus effect size (median ratio).

A cell is flagged only when the difference is both statistically significant on the raw
per-iteration samples and large enough to matter (``min_effect``), and the bootstrap confidence
interval of the ratio excludes 1. Noise alone almost never trips all three.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from edgebench.results.records import Record

#: Latency statistics computed from the raw samples (quantile, or None for the mean).
LATENCY_METRICS: dict[str, float | None] = {
    "p50": 0.50,
    "p90": 0.90,
    "p95": 0.95,
    "p99": 0.99,
    "mean": None,
}
#: Scalar metrics without raw samples: (Record attribute, lower is better, unit).
SCALAR_METRICS: dict[str, tuple[str, bool, str]] = {
    "throughput": ("throughput_ips", False, "inf/s"),
    "energy": ("energy_mj_per_inf", True, "mJ/inf"),
    "memory": ("peak_rss_mb", True, "MB"),
}
VERDICTS = ("regressed", "improved", "unchanged", "new", "missing", "not_comparable")

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240601
#: Upper bound on resample-matrix elements held in memory at once.
_BOOTSTRAP_CHUNK_ELEMENTS = 4_000_000


@dataclass
class CellVerdict:
    cell_id: str
    verdict: str
    base_p50_ms: float | None
    new_p50_ms: float | None
    #: new / base of the compared metric (for throughput: >1 means faster).
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    reason: str
    metric: str = "p50"
    base_value: float | None = None
    new_value: float | None = None
    n_base: int = 0
    n_new: int = 0


# --------------------------------------------------------------------------- statistics


def _average_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """1-based ranks with ties sharing their average rank, and the tie group sizes."""
    uniq, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    del uniq
    ends = np.cumsum(counts)
    starts = ends - counts
    avg = (starts + 1 + ends) / 2.0
    return avg[inverse], counts


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test, normal approximation with tie and continuity correction.

    Returns ``(U, p)`` where U is the statistic of ``x`` (as scipy.stats.mannwhitneyu with
    ``method="asymptotic"``, ``use_continuity=True``).
    """
    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    n1, n2 = a.size, b.size
    if n1 == 0 or n2 == 0:
        raise ValueError("mann_whitney_u needs samples on both sides")
    ranks, ties = _average_ranks(np.concatenate([a, b]))
    u1 = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2.0)
    u2 = n1 * n2 - u1
    n = n1 + n2
    mu = n1 * n2 / 2.0
    tie_term = float((ties.astype(np.float64) ** 3 - ties).sum())
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return u1, 1.0
    z = (max(u1, u2) - mu - 0.5) / math.sqrt(var)
    p = math.erfc(z / math.sqrt(2.0))  # 2 * survival function of the standard normal
    return u1, float(min(max(p, 0.0), 1.0))


def _statistic(values: np.ndarray, quantile: float | None, axis: int | None = None) -> np.ndarray:
    if quantile is None:
        return np.mean(values, axis=axis)
    return np.quantile(values, quantile, axis=axis)


def _bootstrap_stat(
    values: np.ndarray, quantile: float | None, rng: np.random.Generator, resamples: int
) -> np.ndarray:
    """The statistic over ``resamples`` bootstrap resamples (vectorized, in bounded chunks)."""
    n = values.size
    per_chunk = max(1, _BOOTSTRAP_CHUNK_ELEMENTS // max(n, 1))
    out = np.empty(resamples, dtype=np.float64)
    done = 0
    while done < resamples:
        k = min(per_chunk, resamples - done)
        idx = rng.integers(0, n, size=(k, n))
        out[done : done + k] = _statistic(values[idx], quantile, axis=1)
        done += k
    return out


def bootstrap_ratio_ci(
    base: Sequence[float],
    new: Sequence[float],
    *,
    quantile: float | None = 0.5,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = 0.95,
) -> tuple[float, float, float]:
    """Ratio statistic(new)/statistic(base) and its percentile bootstrap CI (seeded)."""
    b = np.asarray(base, dtype=np.float64)
    a = np.asarray(new, dtype=np.float64)
    rng = np.random.default_rng(seed)
    point = float(_statistic(a, quantile)) / float(_statistic(b, quantile))
    boot_b = _bootstrap_stat(b, quantile, rng, resamples)
    boot_a = _bootstrap_stat(a, quantile, rng, resamples)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = boot_a / boot_b
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(ratios, [tail, 1.0 - tail])
    return point, float(lo), float(hi)


# --------------------------------------------------------------------------- records


def record_p50_ms(record: Record) -> float | None:
    if record.samples_ns:
        return float(np.median(np.asarray(record.samples_ns, dtype=np.float64))) / 1e6
    if record.latency_ms and record.latency_ms.get("p50") is not None:
        return float(record.latency_ms["p50"])
    return None


def metric_value(record: Record, metric: str) -> float | None:
    """One number for a record: latency metrics in ms, scalar metrics in their own unit."""
    if metric in SCALAR_METRICS:
        value = getattr(record, SCALAR_METRICS[metric][0])
        return None if value is None else float(value)
    if metric not in LATENCY_METRICS:
        raise ValueError(f"unknown metric {metric!r}; one of {metric_names()}")
    if record.latency_ms and record.latency_ms.get(metric) is not None:
        return float(record.latency_ms[metric])
    if record.samples_ns:
        ms = np.asarray(record.samples_ns, dtype=np.float64) / 1e6
        return float(_statistic(ms, LATENCY_METRICS[metric]))
    return None


def lower_is_better(metric: str) -> bool:
    return SCALAR_METRICS[metric][1] if metric in SCALAR_METRICS else True


def metric_names() -> tuple[str, ...]:
    return (*LATENCY_METRICS, *SCALAR_METRICS)


def _by_cell(records: Iterable[Record]) -> dict[str, Record]:
    """Last record per cell id (a re-run cell supersedes the earlier one)."""
    out: dict[str, Record] = {}
    for r in records:
        out[r.cell_id] = r
    return out


def _compare_cell(
    b: Record, n: Record, *, min_effect: float, alpha: float, metric: str
) -> CellVerdict:
    verdict = CellVerdict(
        cell_id=b.cell_id,
        verdict="not_comparable",
        base_p50_ms=record_p50_ms(b),
        new_p50_ms=record_p50_ms(n),
        ratio=None,
        ci_low=None,
        ci_high=None,
        p_value=None,
        reason="",
        metric=metric,
        n_base=len(b.samples_ns),
        n_new=len(n.samples_ns),
    )
    if b.status != "ok" or n.status != "ok":
        verdict.reason = f"status base={b.status} new={n.status}; only ok cells are compared"
        return verdict

    if metric in SCALAR_METRICS:
        return _compare_scalar(verdict, b, n, min_effect=min_effect, metric=metric)

    if not b.samples_ns or not n.samples_ns:
        side = "base" if not b.samples_ns else "new"
        verdict.reason = f"no raw samples in {side} run"
        return verdict
    base_ms = np.asarray(b.samples_ns, dtype=np.float64) / 1e6
    new_ms = np.asarray(n.samples_ns, dtype=np.float64) / 1e6
    quantile = LATENCY_METRICS[metric]
    base_stat = float(_statistic(base_ms, quantile))
    verdict.base_value = base_stat
    verdict.new_value = float(_statistic(new_ms, quantile))
    if base_stat <= 0:
        verdict.reason = f"base {metric} is {base_stat:g} ms; a ratio is meaningless"
        return verdict
    _, p = mann_whitney_u(base_ms, new_ms)
    ratio, lo, hi = bootstrap_ratio_ci(base_ms, new_ms, quantile=quantile)
    verdict.ratio, verdict.ci_low, verdict.ci_high, verdict.p_value = ratio, lo, hi, p
    change = f"{metric} {ratio - 1:+.1%} (95% CI {lo - 1:+.1%}..{hi - 1:+.1%}), p={p:.2g}"
    significant = p < alpha
    if significant and ratio >= 1 + min_effect and lo > 1:
        verdict.verdict = "regressed"
        verdict.reason = f"slower: {change}"
    elif significant and ratio <= 1 - min_effect and hi < 1:
        verdict.verdict = "improved"
        verdict.reason = f"faster: {change}"
    else:
        verdict.verdict = "unchanged"
        why = []
        if not significant:
            why.append(f"p>={alpha:g}")
        if abs(ratio - 1) < min_effect:
            why.append(f"|effect|<{min_effect:.0%}")
        if lo <= 1 <= hi:
            why.append("CI spans 1")
        verdict.reason = f"{change}; " + (", ".join(why) or "criteria not all met")
    return verdict


def _compare_scalar(
    verdict: CellVerdict, b: Record, n: Record, *, min_effect: float, metric: str
) -> CellVerdict:
    attr, lower_better, unit = SCALAR_METRICS[metric]
    bv, nv = getattr(b, attr), getattr(n, attr)
    verdict.base_value = None if bv is None else float(bv)
    verdict.new_value = None if nv is None else float(nv)
    if bv is None or nv is None:
        side = "base" if bv is None else "new"
        verdict.reason = f"no {metric} value in {side} run"
        return verdict
    if bv <= 0:
        verdict.reason = f"base {metric} is {bv:g} {unit}; a ratio is meaningless"
        return verdict
    ratio = float(nv) / float(bv)
    verdict.ratio = ratio
    worse = ratio >= 1 + min_effect if lower_better else ratio <= 1 - min_effect
    better = ratio <= 1 - min_effect if lower_better else ratio >= 1 + min_effect
    change = (
        f"{metric} {bv:.4g} -> {nv:.4g} {unit} ({ratio - 1:+.1%}); "
        "single value per run, no significance test"
    )
    verdict.verdict = "regressed" if worse else "improved" if better else "unchanged"
    if verdict.verdict == "unchanged":
        change += f", |effect|<{min_effect:.0%}"
    verdict.reason = change
    return verdict


def compare_runs(
    base: list[Record],
    new: list[Record],
    *,
    min_effect: float = 0.05,
    alpha: float = 0.01,
    metric: str = "p50",
) -> list[CellVerdict]:
    """One verdict per cell id present in either run, base order first, then new-only cells."""
    if metric not in LATENCY_METRICS and metric not in SCALAR_METRICS:
        raise ValueError(f"unknown metric {metric!r}; one of {metric_names()}")
    base_cells, new_cells = _by_cell(base), _by_cell(new)
    out: list[CellVerdict] = []
    for cell_id, b in base_cells.items():
        n = new_cells.get(cell_id)
        if n is None:
            out.append(
                CellVerdict(
                    cell_id,
                    "missing",
                    record_p50_ms(b),
                    None,
                    None,
                    None,
                    None,
                    None,
                    "only in base run",
                    metric=metric,
                    n_base=len(b.samples_ns),
                )
            )
            continue
        out.append(_compare_cell(b, n, min_effect=min_effect, alpha=alpha, metric=metric))
    for cell_id, n in new_cells.items():
        if cell_id not in base_cells:
            out.append(
                CellVerdict(
                    cell_id,
                    "new",
                    None,
                    record_p50_ms(n),
                    None,
                    None,
                    None,
                    None,
                    "only in new run",
                    metric=metric,
                    n_new=len(n.samples_ns),
                )
            )
    return out


def any_regression(verdicts: Iterable[CellVerdict]) -> bool:
    return any(v.verdict == "regressed" for v in verdicts)


# --------------------------------------------------------------------------- output


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def format_comparison(verdicts: Sequence[CellVerdict]) -> str:
    """A plain-text table, one row per cell, and a one-line summary."""
    headers = ["cell", "verdict", "base p50 ms", "new p50 ms", "ratio", "95% CI", "p", "reason"]
    rows = []
    for v in verdicts:
        ci = "-" if v.ci_low is None else f"{v.ci_low:.3f}..{v.ci_high:.3f}"
        rows.append(
            [
                v.cell_id,
                v.verdict,
                _fmt(v.base_p50_ms, ".3f"),
                _fmt(v.new_p50_ms, ".3f"),
                _fmt(v.ratio, ".3f"),
                ci,
                _fmt(v.p_value, ".2g"),
                v.reason,
            ]
        )
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    numeric = {2, 3, 4, 6}

    def line(cells: list[str]) -> str:
        parts = [
            c.rjust(widths[i]) if i in numeric else c.ljust(widths[i]) for i, c in enumerate(cells)
        ]
        return "  ".join(parts).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out.extend(line(r) for r in rows)
    counts = {k: sum(1 for v in verdicts if v.verdict == k) for k in VERDICTS}
    out.append("")
    out.append(", ".join(f"{counts[k]} {k}" for k in VERDICTS if counts[k]) or "no cells")
    return "\n".join(out)


_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: str) -> str:
    """Drop characters XML 1.0 cannot carry at all (escaping is left to ElementTree)."""
    return _XML_INVALID.sub("?", text)


def junit_xml(verdicts: Sequence[CellVerdict], suite_name: str) -> str:
    """JUnit XML: one testcase per cell; regressed -> failure, new/missing/not_comparable ->
    skipped, improved/unchanged -> pass. Names are escaped by ElementTree."""
    failures = sum(1 for v in verdicts if v.verdict == "regressed")
    skipped = sum(1 for v in verdicts if v.verdict in ("new", "missing", "not_comparable"))
    suite = ET.Element(
        "testsuite",
        {
            "name": _xml_text(suite_name),
            "tests": str(len(verdicts)),
            "failures": str(failures),
            "errors": "0",
            "skipped": str(skipped),
        },
    )
    for v in verdicts:
        case = ET.SubElement(
            suite, "testcase", {"classname": _xml_text(suite_name), "name": _xml_text(v.cell_id)}
        )
        if v.verdict == "regressed":
            fail = ET.SubElement(
                case, "failure", {"message": _xml_text(v.reason), "type": "regression"}
            )
            fail.text = (
                f"base p50 {_fmt(v.base_p50_ms, '.3f')} ms, new p50 {_fmt(v.new_p50_ms, '.3f')} ms"
                f", ratio {_fmt(v.ratio, '.3f')}, p={_fmt(v.p_value, '.2g')}"
            )
        elif v.verdict in ("new", "missing", "not_comparable"):
            ET.SubElement(case, "skipped", {"message": _xml_text(f"{v.verdict}: {v.reason}")})
        else:
            out = ET.SubElement(case, "system-out")
            out.text = _xml_text(f"{v.verdict}: {v.reason}")
    body = ET.tostring(suite, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
