"""The runner's typed failure: a result's ``error`` object (kind, message, detail) as the
runner raises it before writing it.

Standard library only, Python 3.8.
"""


class BackendError(Exception):
    """A failure with a machine-readable kind (one of protocol.ERROR_KINDS)."""

    def __init__(self, kind: str, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.detail = detail
