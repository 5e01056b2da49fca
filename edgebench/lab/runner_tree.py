"""The Python runner as a device receives it, under the device's runner folder: the runner
package (``edgebench.runners`` on the host) as ``edgebench_runner/``, and beside it its entry
script ``runner.py`` (runners/launcher.py), which Python runs with that folder first on
``sys.path``, so the package imports by its name and nothing edits ``sys.path``."""

from __future__ import annotations

import os
from pathlib import Path

from edgebench import runners

#: The runner package on the host.
RUNNER_PACKAGE = Path(runners.__file__).parent
#: Its name on a device.
DEVICE_PACKAGE = "edgebench_runner"
#: The entry script a device runs, as the device's runner folder holds it.
ENTRY_SCRIPT = "runner.py"
LAUNCHER = RUNNER_PACKAGE / "launcher.py"
#: The host's way to run the runner from the installed package.
HOST_MODULE = runners.__name__
#: The package's subpackages a device needs (the shared protocol, the framework backends);
#: native_runner/ holds C++ sources, built on the host.
SUBPACKAGES = ("protocol", "backends")


def runner_tree() -> list[tuple[Path, str]]:
    """(host file, its path under the device's runner folder) for every file the Python runner
    needs there: the entry script, then the package (its modules, protocol and backends)."""
    files = sorted(
        p for p in RUNNER_PACKAGE.glob("*.py") if p.name not in (LAUNCHER.name, "__main__.py")
    )
    for sub in SUBPACKAGES:
        files += sorted((RUNNER_PACKAGE / sub).glob("*.py"))
    package = [(f, f"{DEVICE_PACKAGE}/{f.relative_to(RUNNER_PACKAGE).as_posix()}") for f in files]
    return [(LAUNCHER, ENTRY_SCRIPT), *package]


def write_runner_tree(folder: Path) -> Path:
    """Lay the runner out in ``folder`` as a device's runner folder holds it; its entry script.
    A file already there with the same bytes is left alone; each other one is replaced whole
    (a temporary file, then a rename), so a runner starting meanwhile never reads half a file."""
    for local, relative in runner_tree():
        target = folder / relative
        data = local.read_bytes()
        if target.is_file() and target.read_bytes() == data:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            tmp.write_bytes(data)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    return folder / ENTRY_SCRIPT
