"""EDGEBENCH_RETRY_BACKOFF: the waits before each retry of a cell whose device dropped."""

from __future__ import annotations

import pytest
from fakes.cli_checks import cli

from edgebench.errors import UserError
from edgebench.measure.retry_backoff import DEFAULT_S, ENV, retry_backoff_s


def test_unset_or_empty_is_the_default_and_none_turns_retrying_off():
    assert retry_backoff_s({}) == retry_backoff_s({ENV: " "}) == DEFAULT_S == (1.0, 2.0, 4.0)
    assert retry_backoff_s({ENV: "none"}) == ()
    assert retry_backoff_s({ENV: "0"}) == (0.0,)  # one retry, at once
    assert retry_backoff_s({ENV: "0.5, 3,10"}) == (0.5, 3.0, 10.0)


@pytest.mark.parametrize("value", ["fast", "1,,2", "-1", "nan", "601", ",".join(["1"] * 11)])
def test_a_bad_value_is_refused_naming_the_variable_and_the_fix(value: str):
    with pytest.raises(UserError) as caught:
        retry_backoff_s({ENV: value})
    message = str(caught.value)
    assert message.startswith(f"{ENV}={value!r}") and f"{ENV}=1,2,4" in message


def test_a_run_with_a_bad_backoff_is_refused_in_one_line_before_any_cell(eb_env):
    args = ["run", "--models", "mobilenetv2", "--frameworks", "onnxruntime", "--iterations", "1"]
    result = cli(args, {**eb_env, ENV: "soon"}, timeout=300)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"edgebench: error: {ENV}='soon' is not a list of seconds: give seconds separated by "
        f"commas, e.g. {ENV}=1,2,4 (or none: no retry)"
    )
    assert "[1/" not in result.stderr  # no cell started
