"""One model input as the runner feeds it: the ``inputs`` entries of a spec and a result.

Standard library only, Python 3.8.
"""

from __future__ import annotations

from typing import Any, Dict, Sequence


class InputSpec:
    """One model input as the runner feeds it."""

    def __init__(self, name: str, shape: Sequence[int], dtype: str) -> None:
        self.name = name
        self.shape = [int(d) for d in shape]
        self.dtype = dtype

    def as_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}
