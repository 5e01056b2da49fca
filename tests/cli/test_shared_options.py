"""Options several commands share are generated from the setting declarations: each command
reads a value, and refuses a bad one, as `run` and a plan file do."""

import pytest
from click.testing import CliRunner

from edgebench.cli import lab as lab_commands
from edgebench.cli.app import cli
from edgebench.errors import UserError
from edgebench.lab.lab_file import Lab
from edgebench.measure import session
from edgebench.planning.config import Thresholds
from edgebench.planning.plan_file import load_plan


def parsed_devices(monkeypatch, command: str, typed: list[str]) -> list[str] | str:
    """What ``command`` makes of ``--devices`` given as ``typed`` (one entry per repeat): the
    device names it goes on with, or the error line it stops with."""
    seen: list[list[str]] = []

    def fake_run_session(config, **kwargs) -> int:
        seen.append(list(config.sweep.devices))
        return 0

    def fake_resolve(names, lab) -> list:
        seen.append(list(names))
        return []

    monkeypatch.setattr(session, "run_session", fake_run_session)
    monkeypatch.setattr(lab_commands, "resolve_devices", fake_resolve)
    monkeypatch.setattr(lab_commands, "load_lab", lambda path: Lab(None, {}))
    args = [command]
    for value in typed:
        args += ["--devices", value]
    result = CliRunner().invoke(cli, args)
    if isinstance(result.exception, UserError):
        return str(result.exception)
    assert result.exit_code == 0, result.output
    (devices,) = seen
    return devices


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        (
            ["a, b,,c"],
            "--devices: 'a, b,,c' has an empty item; separate the items with single commas",
        ),
        (["a,b,a"], ["a", "b"]),
        (["a", "a"], ["a"]),
        ([" a , b "], ["a", "b"]),
        ([""], "--devices: is empty; name at least one device, e.g. local"),
        ([","], "--devices: is empty; name at least one device, e.g. local"),
    ],
)
def test_run_and_devices_parse_a_device_list_the_same_way(monkeypatch, typed, expected):
    assert parsed_devices(monkeypatch, "run", typed) == expected
    assert parsed_devices(monkeypatch, "devices", typed) == expected


def test_devices_without_a_list_probes_every_device(monkeypatch):
    seen = []

    def fake_resolve(names, lab) -> list:
        seen.append(names)
        return []

    monkeypatch.setattr(lab_commands, "resolve_devices", fake_resolve)
    monkeypatch.setattr(lab_commands, "load_lab", lambda path: Lab(None, {}))
    result = CliRunner().invoke(cli, ["devices"])
    assert result.exit_code == 0, result.output
    assert seen == [["local"]]


def refusal(args: list[str]) -> str:
    result = CliRunner().invoke(cli, args)
    assert isinstance(result.exception, UserError), (result.output, result.exception)
    return str(result.exception)


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["show"], "--results-dir"),
        (["history"], "--results-dir"),
        (["report"], "--results-dir"),
        (["export"], "--results-dir"),
        (["compare", "a", "b"], "--results-dir"),
        (["recommend", "--devices", "x", "--model", "m"], "--results-dir"),
        (["run"], "--results-dir"),
        (["show"], "--metric"),
        (["history"], "--metric"),
        (["compare", "a", "b"], "--metric"),
        (["run"], "--metric"),
    ],
)
def test_shared_options_refuse_a_bad_value_with_runs_line(tmp_path, args, option):
    bad = {"--results-dir": str(tmp_path / "a-file"), "--metric": "p42"}[option]
    (tmp_path / "a-file").write_text("")
    line = refusal([*args, option, bad])
    assert line == refusal(["run", option, bad])
    assert line.startswith(f"{option}: ")


@pytest.mark.parametrize(("option", "key"), [("--min-effect", "min_effect"), ("--alpha", "alpha")])
def test_compare_thresholds_are_the_plans(tmp_path, option, key):
    plan = tmp_path / "p.toml"
    plan.write_text(f"[thresholds]\n{key} = 1.0\n")
    with pytest.raises(UserError) as from_plan:
        load_plan(plan)
    from_compare = refusal(["compare", "a", "b", option, "1.0"])
    problem = str(from_plan.value).split(f"{key}: ", 1)[1]
    assert from_compare == f"{option}: {problem}"
    params = {p.name: p for p in cli.commands["compare"].params}
    assert params[key].default == getattr(Thresholds(), key)
    assert params["metric"].default == Thresholds().metric
