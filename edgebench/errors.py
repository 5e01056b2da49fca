"""Errors meant for the user: printed as one line, never as a traceback."""

from __future__ import annotations


class UserError(Exception):
    """Bad input or environment; the message names the thing and the fix."""

    exit_code = 2
