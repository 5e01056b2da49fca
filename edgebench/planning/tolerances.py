"""How far a framework's outputs may be from ONNX Runtime's, per precision (the rule itself,
``Tolerance``, is in ``edgebench.agreement``)."""

from __future__ import annotations

from edgebench.agreement import Tolerance

__all__ = ["DEFAULT_TOLERANCE", "TOLERANCES", "Tolerance"]

#: The one table of output-check defaults, per precision (int8 will get its own rule).
TOLERANCES = {
    "fp32": Tolerance(rtol=1e-3, atol_floor=1e-6, cosine_gap=1e-6),
    "fp16": Tolerance(rtol=1e-1, atol_floor=1e-4, cosine_gap=2e-3, rel_l2=6e-2),
}
#: rtol per precision: what ``--tolerance`` and ``--tolerance-fp16`` default to.
DEFAULT_TOLERANCE = {precision: t.rtol for precision, t in TOLERANCES.items()}
