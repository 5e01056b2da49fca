"""Whether the environment steers the Vulkan loader away from the installed drivers.

``VK_DRIVER_FILES`` (and the older ``VK_ICD_FILENAMES``, which it replaces) make the loader
read only the driver manifests they name. Set to a path that does not exist, or to a file
that is no driver manifest, they leave the loader with no driver although the drivers are
installed, and "install the drivers" would be the wrong advice. Called only once the loader
has found no device.

Standard library only (Python 3.8+): the runner calls it on phones and boards.
"""

from __future__ import annotations

import json
import os
from typing import Mapping, Optional

#: The variables that replace the loader's driver search, the one it obeys first.
DRIVER_VARIABLES = ("VK_DRIVER_FILES", "VK_ICD_FILENAMES")
#: The most bytes of a manifest read: a real one is well under a kilobyte.
MANIFEST_LIMIT = 1 << 20


def driver_env_problem(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """One line naming the variable and its value when the variable the loader obeys names
    no usable driver manifest; None when no such variable is set or one entry is usable."""
    environ = os.environ if environ is None else environ
    for variable in DRIVER_VARIABLES:
        value = environ.get(variable)
        if not value:
            continue
        entries = [entry for entry in value.split(os.pathsep) if entry]
        problems = [_entry_problem(entry) for entry in entries]
        if entries and None in problems:
            return None
        why = "; ".join(p for p in problems if p) or "it names no file"
        return (
            "%s=%s names no Vulkan driver (%s), so the loader ignores the installed ones: "
            "unset %s, or point it at a driver's .json manifest" % (variable, value, why, variable)
        )
    return None


def _entry_problem(entry: str) -> Optional[str]:
    """Why one entry of the variable gives the loader no driver; None when it can."""
    if os.path.isdir(entry):
        names = sorted(n for n in os.listdir(entry) if n.endswith(".json"))
        problems = [_manifest_problem(os.path.join(entry, n)) for n in names]
        if None in problems:
            return None
        return "%s: a folder with no driver manifest" % entry
    if not os.path.exists(entry):
        return "%s does not exist" % entry
    return _manifest_problem(entry)


def _manifest_problem(path: str) -> Optional[str]:
    """Why ``path`` is no driver manifest (JSON whose ``ICD.library_path`` names the driver,
    a file where the path is absolute); None when it is one."""
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read(MANIFEST_LIMIT).decode("utf-8"))
    except (OSError, ValueError) as exc:
        return "%s is no JSON driver manifest (%s)" % (path, type(exc).__name__)
    icd = data.get("ICD") if isinstance(data, dict) else None
    library = icd.get("library_path") if isinstance(icd, dict) else None
    if not isinstance(library, str) or not library:
        return "%s is no driver manifest (no ICD.library_path)" % path
    if os.path.isabs(library) and not os.path.exists(library):
        return "%s names a driver that does not exist (%s)" % (path, library)
    return None
