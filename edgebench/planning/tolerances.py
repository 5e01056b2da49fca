"""How far a framework's outputs may be from ONNX Runtime's, per precision."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tolerance:
    """How far a framework's outputs may be from ONNX Runtime's at one precision.

    Each element must satisfy ``|out - ref| <= atol + rtol * |ref|`` with
    ``atol = max(rtol * max|ref|, atol_floor)``: an error is allowed in proportion to the
    element and to the output's peak, so a sparse map (mostly ~0) is judged against its own
    scale. A score vector (classifier logits) must also keep ``1 - cosine <= cosine_gap``;
    with ``rel_l2``, every output must also keep ``||out - ref|| / ||ref|| <= rel_l2`` (fp16:
    reduced-precision rounding spreads over every element, a few far more than the rest, so
    the norm bounds it better than any one element does);
    the gap scales with ``(rtol / default rtol)**2`` when ``--tolerance`` changes rtol.
    docs/converters.md gives the measurements these figures come from.
    """

    rtol: float
    atol_floor: float
    cosine_gap: float
    rel_l2: float | None = None


#: The one table of output-check defaults, per precision (int8 will get its own rule).
TOLERANCES = {
    "fp32": Tolerance(rtol=1e-3, atol_floor=1e-6, cosine_gap=1e-6),
    "fp16": Tolerance(rtol=1e-1, atol_floor=1e-4, cosine_gap=2e-3, rel_l2=6e-2),
}
#: rtol per precision: what ``--tolerance`` and ``--tolerance-fp16`` default to.
DEFAULT_TOLERANCE = {precision: t.rtol for precision, t in TOLERANCES.items()}
