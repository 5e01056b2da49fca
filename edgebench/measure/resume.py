"""--resume: the command that continues a run, and the check that it continues it with the
settings it was measured with."""

from __future__ import annotations

import json
import shlex
import sys

from edgebench.errors import UserError
from edgebench.planning.config import RunConfig, settings, stored_settings
from edgebench.results.store import RunDir

#: The parts of the configuration that decide what a cell measures: a resumed run keeps them.
MEASURED_PARTS = ("sweep", "timing", "telemetry", "checks")
#: Settings in those parts that do not change a measurement.
_NOT_MEASURED = {("checks", "force_convert")}


def resume_hint(run_dir: RunDir) -> str:
    """The command that continues this run: the same options, and --resume."""
    argv = ["edgebench", *without_resume(sys.argv[1:]), "--resume", run_dir.run_id]
    return " ".join(shlex.quote(a) for a in argv)


def check_same_settings(run_dir: RunDir, config: RunConfig) -> None:
    """--resume continues a run only with the settings it was measured with: one run must
    not mix 30 s and 3 s cells, nor gain a framework once it is finished."""
    stored = run_dir.metadata().get("config")
    if not isinstance(stored, dict):
        return  # a run from before run.json kept its configuration
    earlier = stored_settings(stored)
    now = stored_settings(json.loads(json.dumps(config.as_dict())))
    differ = []
    for spec in settings():
        key = (spec.part, spec.name)
        if spec.part not in MEASURED_PARTS or key in _NOT_MEASURED or key not in earlier:
            continue
        before, after = earlier[key], now[key]
        if before != after:
            name = spec.option or f"{spec.part}.{spec.name}"
            differ.append(f"{name} {_shown(before)} (run) vs {_shown(after)} (now)")
    if differ:
        raise UserError(
            f"--resume {run_dir.run_id}: settings differ from the run's: {'; '.join(differ)}; "
            "resume with the run's options, or start a new run"
        )


def _shown(value: object) -> str:
    if value is None or value == []:
        return "unset"
    if isinstance(value, list):
        return ",".join(_shown(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def without_resume(argv: list[str]) -> list[str]:
    """The command line without its --resume and the run id after it."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "--resume":
            skip = True
            continue
        if arg.startswith("--resume="):
            continue
        out.append(arg)
    return out
