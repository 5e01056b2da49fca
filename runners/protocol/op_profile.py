"""The per-operator profile a result carries (``op_profile``), as the Python runner's profilers
and the host's parsers of the frameworks' own tools write it.

The result (docs/profiling.md)::

    {"iterations": N, "source": "...", "total_ms": sum of the ops' time_ms,
     "inference_ms": mean wall time of one profiled inference,
     "ops": [{"name", "type", "impl", "time_ms": mean per iteration, "count": calls per
              iteration}, ... slowest first]}

or ``{"unavailable": "<why>"}``.

Standard library only, Python 3.8.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

#: (node name, op type, implementation, nanoseconds) of one call of one node.
Event = Tuple[str, str, Any, int]


def summarize(
    source: str, iterations: int, events: List[Event], wall_ns: List[int]
) -> Dict[str, Any]:
    """The profile of ``events`` (every call of every node over all profiled iterations)."""
    totals: Dict[Tuple[str, str, Any], List[int]] = {}
    for name, op_type, impl, ns in events:
        entry = totals.setdefault((name, op_type, impl), [0, 0])
        entry[0] += ns
        entry[1] += 1
    ops = [
        {
            "name": name,
            "type": op_type,
            "impl": impl,
            "time_ms": ns / iterations / 1e6,
            "count": max(1, round(calls / iterations)),
        }
        for (name, op_type, impl), (ns, calls) in totals.items()
    ]
    return profile_result(source, iterations, ops, sum(wall_ns) / len(wall_ns) / 1e6)


def profile_result(
    source: str, iterations: int, ops: List[Dict[str, Any]], inference_ms: float
) -> Dict[str, Any]:
    """The result from op rows (``time_ms``: mean per iteration); the native tools' parsers
    use it too. Rows without a measurable time are left out."""
    kept = [dict(op, time_ms=round(op["time_ms"], 6)) for op in ops if op["time_ms"] > 0]
    kept.sort(key=lambda op: op["time_ms"], reverse=True)
    return {
        "iterations": iterations,
        "source": source,
        "ops": kept,
        "total_ms": round(sum(op["time_ms"] for op in kept), 6),
        "inference_ms": round(inference_ms, 6),
    }
