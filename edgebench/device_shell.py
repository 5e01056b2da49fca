"""Pieces of the command lines the host runs on a device, shared by the runner's launcher
(lab/) and the framework tools' adapters: the affinity mask ``taskset`` takes, and the shell
line that records a PID before the command replaces it."""

from __future__ import annotations

from collections.abc import Sequence

#: The highest cpu index a mask may name (the kernel's NR_CPUS on the largest configs).
MAX_CPU = 4095

#: ``sh -c`` script: $0 is the PID file, "$@" the command that replaces the shell, so a command
#: that hangs or a run that is aborted can be killed on the device by that PID.
RECORD_PID_THEN_EXEC = 'echo $$ > "$0" && exec "$@"'


def taskset_mask(cores: Sequence[int]) -> str:
    """The hexadecimal affinity mask for ``cores`` ([4, 5, 6, 7] -> "f0"); util-linux's
    taskset and Android's toybox both take it."""
    if isinstance(cores, (str, bytes)) or not cores:
        raise ValueError(f"taskset needs at least one core, got {cores!r}")
    mask = 0
    for core in cores:
        if isinstance(core, bool) or not isinstance(core, int) or core < 0 or core > MAX_CPU:
            raise ValueError(f"invalid core index {core!r}")
        mask |= 1 << core
    return format(mask, "x")
