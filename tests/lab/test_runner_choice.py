"""Which runner measures on a device: the choice as a value (choose_runner), and the device
probing only what that choice needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgebench.builds.native_runner import BuiltRunner
from edgebench.builds.targets import TARGETS
from edgebench.lab.device import LocalDevice
from edgebench.lab.runner_choice import (
    TOOLS_NOT_PROBED,
    Probe,
    RunnerChoice,
    choose_runner,
)
from edgebench.lab.runner_kinds import RunnerKind

ANSWER = {"python": "3.11.2", "machine": "x86_64", "frameworks": {}}
NO_BUILD = "no edgebench-native build for x86_64-linux"


def a_build(tmp_path: Path) -> BuiltRunner:
    return BuiltRunner(
        target=TARGETS["x86_64-linux"],
        path=tmp_path / "edgebench-native",
        sha256="0" * 64,
        size_bytes=1,
        frameworks={"ncnn": "1.0"},
        compiler="g++ 12.2.0",
        seconds=1.0,
        built_at="2025-01-01T00:00:00Z",
    )


@pytest.mark.parametrize("kind", [RunnerKind.PYTHON, RunnerKind.FRAMEWORK_TOOLS])
def test_a_named_kind_is_taken_as_it_is(kind: RunnerKind) -> None:
    choice = choose_runner(kind)
    assert choice == RunnerChoice(kind)
    assert choice.label() == kind.value


def test_edgebench_native_names_its_build_or_why_there_is_none(tmp_path: Path) -> None:
    build = a_build(tmp_path)
    chosen = choose_runner(RunnerKind.EDGEBENCH_NATIVE, build=build)
    assert (chosen.build, chosen.unusable) == (build, None)
    assert chosen.label() == "edgebench-native (x86_64-linux)"
    missing = choose_runner(RunnerKind.EDGEBENCH_NATIVE, no_build=NO_BUILD)
    assert (missing.kind, missing.unusable, missing.label()) == (
        RunnerKind.EDGEBENCH_NATIVE,
        NO_BUILD,
        "edgebench-native",
    )


def test_auto_prefers_python_then_a_build_then_the_framework_tools(tmp_path: Path) -> None:
    python = choose_runner(RunnerKind.AUTO, Probe(ANSWER), a_build(tmp_path))
    assert (python.kind, python.why) == (RunnerKind.PYTHON, "the device runs Python")

    broken = Probe(error="python3: not found")
    native = choose_runner(RunnerKind.AUTO, broken, a_build(tmp_path))
    assert native.kind == RunnerKind.EDGEBENCH_NATIVE and native.build is not None
    assert native.why == "no usable Python (python3: not found); an edgebench-native build fits"

    tools = choose_runner(RunnerKind.AUTO, broken, None, no_build=NO_BUILD)
    assert tools.kind == RunnerKind.FRAMEWORK_TOOLS and tools.unusable is None
    assert tools.why == f"no usable Python (python3: not found) and {NO_BUILD}"


def test_auto_where_the_tools_cannot_go_leaves_nothing_usable() -> None:
    broken = Probe(error="python3: not found")
    choice = choose_runner(RunnerKind.AUTO, broken, None, no_build=NO_BUILD, runs_tools=False)
    assert choice.kind == RunnerKind.PYTHON and choice.why is None
    assert choice.unusable == f"no usable Python (python3: not found) and {NO_BUILD}"


def test_auto_needs_the_python_probe() -> None:
    with pytest.raises(ValueError, match="Python runner's probe"):
        choose_runner(RunnerKind.AUTO)


class ScriptedDevice(LocalDevice):
    """This host, with its probes and its build lookup answered from a script, counted."""

    def __init__(self, requested: RunnerKind, python_works: bool, build: BuiltRunner | None):
        super().__init__("scripted")
        self.requested_runner = requested
        self.python_works = python_works
        self.build = build
        self.probed: list[RunnerKind] = []
        self.looked_for_builds = 0

    def probe_runner(self, choice: RunnerChoice) -> Probe:
        self.probed.append(choice.kind)
        if choice.kind == RunnerKind.PYTHON and not self.python_works:
            return Probe(error="python3: not found")
        return Probe(dict(ANSWER, python=None if choice.build else "3.11.2"))

    def choose_native_build(self) -> BuiltRunner | None:
        self.looked_for_builds += 1
        return self.build


def test_a_device_probes_only_what_its_choice_needs(tmp_path: Path) -> None:
    python = ScriptedDevice(RunnerKind.AUTO, python_works=True, build=a_build(tmp_path))
    assert python.facts().runner == "python" and python.facts().python == "3.11.2"
    assert (python.probed, python.looked_for_builds) == ([RunnerKind.PYTHON], 0)

    native = ScriptedDevice(RunnerKind.AUTO, python_works=False, build=a_build(tmp_path))
    facts = native.facts()
    assert native.probed == [RunnerKind.PYTHON, RunnerKind.EDGEBENCH_NATIVE]
    assert facts.runner == "edgebench-native (x86_64-linux)" and facts.probe_error is None
    assert native.runner_kind == RunnerKind.EDGEBENCH_NATIVE
    assert native.requested_runner == RunnerKind.AUTO  # the lab's word stays as it was
    assert native.runner_argv("--probe")[0] == str(tmp_path / "edgebench-native")


def test_a_device_without_python_or_build_says_why_in_its_facts() -> None:
    device = ScriptedDevice(RunnerKind.AUTO, python_works=False, build=None)
    facts = device.facts()
    assert device.probed == [RunnerKind.PYTHON]
    assert device.runner_kind == RunnerKind.PYTHON  # the host cannot run the framework tools
    assert facts.runner_choice is None
    assert facts.probe_error.startswith("no usable Python (python3: not found) and no ")


def test_framework_tools_are_not_probed() -> None:
    class Tools(ScriptedDevice):
        runs_framework_tools = True

    device = Tools(RunnerKind.FRAMEWORK_TOOLS, python_works=True, build=None)
    facts = device.facts()
    assert device.probed == [] and device.looked_for_builds == 0
    assert (facts.runner, facts.probe_error) == ("framework-tools", TOOLS_NOT_PROBED)
