"""A runner result held against the protocol's one definition: the JSON Schema derived from
``RunResult`` (jsonschema validates it) and ``RunResult.from_json`` reading it back unchanged."""

from __future__ import annotations

from typing import Any

import jsonschema

from edgebench.runners.protocol.run_result import RunResult, json_schema

VALIDATOR = jsonschema.Draft202012Validator(json_schema())


def assert_fits_protocol(result: dict[str, Any]) -> None:
    """``result`` as a runner printed it fits the schema and reads back as it was written."""
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(result)]
    assert not errors, errors
    # NaN never reaches the line (json_safe), so the read-back compares equal (as a dict:
    # edgebench-native writes its keys in its own order).
    assert RunResult.from_json(result).to_json() == result
