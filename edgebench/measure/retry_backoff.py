"""How long a run waits before each new attempt at a cell whose device connection dropped.

``EDGEBENCH_RETRY_BACKOFF`` sets the waits, in seconds, separated by commas (``1,2,4``, the
default: three attempts after the first, about 7 s in all before a device is called lost), one
attempt per wait; a lab with a slow USB hub may want longer ones, a test suite shorter ones, and
``none`` turns retrying off.
"""

from __future__ import annotations

import math
import os

from edgebench.errors import UserError

ENV = "EDGEBENCH_RETRY_BACKOFF"
DEFAULT_S = (1.0, 2.0, 4.0)
MAX_ATTEMPTS = 10
MAX_WAIT_S = 600.0


def retry_backoff_s(environ: dict[str, str] | None = None) -> tuple[float, ...]:
    """The waits before each retry; UserError, naming the variable and the fix, for a value
    that is not a short list of seconds."""
    raw = (os.environ if environ is None else environ).get(ENV, "").strip()
    if not raw:
        return DEFAULT_S
    if raw.lower() == "none":
        return ()
    fix = f"give seconds separated by commas, e.g. {ENV}=1,2,4 (or none: no retry)"
    try:
        waits = tuple(float(part) for part in raw.split(","))
    except ValueError:
        raise UserError(f"{ENV}={raw!r} is not a list of seconds: {fix}") from None
    if len(waits) > MAX_ATTEMPTS or any(
        not math.isfinite(w) or not 0 <= w <= MAX_WAIT_S for w in waits
    ):
        raise UserError(
            f"{ENV}={raw!r}: at most {MAX_ATTEMPTS} waits of 0 to {MAX_WAIT_S:g} s each; {fix}"
        )
    return waits
