"""Which runner measures on a device, decided from what its probes found."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgebench.builds.native_runner import BuiltRunner
from edgebench.lab.runner_kinds import RunnerKind

#: The probe error of a device measured by the framework tools: nothing of edgebench's runs
#: there to answer a probe.
TOOLS_NOT_PROBED = "runs the frameworks' own benchmark tools (no runner to probe)"


@dataclass(frozen=True)
class Probe:
    """A runner's ``--probe`` answer (its machine, Python, frameworks, emulation evidence), or
    why there is none."""

    answer: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class RunnerChoice:
    """What measures on a device, and why when the lab left the choice to edgebench."""

    kind: RunnerKind
    #: The edgebench-native build the device runs (kind EDGEBENCH_NATIVE, when one fits).
    build: BuiltRunner | None = None
    #: Why ``auto`` chose this kind (stored in the device facts as ``runner_choice``).
    why: str | None = None
    #: Why nothing can measure on the device: every cell fails with it.
    unusable: str | None = None

    def label(self) -> str:
        """The kind as the device facts record it; edgebench-native names its build's target."""
        if self.kind == RunnerKind.EDGEBENCH_NATIVE and self.build is not None:
            return f"{self.kind} ({self.build.target.name})"
        return str(self.kind)


def choose_runner(
    requested: RunnerKind,
    python: Probe | None = None,
    build: BuiltRunner | None = None,
    *,
    no_build: str = "",
    runs_tools: bool = True,
) -> RunnerChoice:
    """The runner for a device whose lab entry asks for ``requested``.

    ``python`` is the Python runner's probe (needed for ``auto``); ``build`` the
    edgebench-native build for the device's ABI, looked up for ``edgebench-native`` and for an
    ``auto`` device whose Python failed, and ``no_build`` says why there is none. ``runs_tools``
    is False where the framework tools cannot be pushed (the host itself).
    """
    if requested == RunnerKind.EDGEBENCH_NATIVE:
        return RunnerChoice(requested, build=build, unusable=None if build else no_build)
    if requested != RunnerKind.AUTO:
        return RunnerChoice(requested)
    if python is None:
        raise ValueError("choosing for runner = auto needs the Python runner's probe")
    if python.ok:
        return RunnerChoice(RunnerKind.PYTHON, why="the device runs Python")
    if build is not None:
        why = f"no usable Python ({python.error}); an edgebench-native build fits"
        return RunnerChoice(RunnerKind.EDGEBENCH_NATIVE, build=build, why=why)
    why = f"no usable Python ({python.error}) and {no_build}"
    if runs_tools:
        return RunnerChoice(RunnerKind.FRAMEWORK_TOOLS, why=why)
    return RunnerChoice(RunnerKind.PYTHON, unusable=why)
