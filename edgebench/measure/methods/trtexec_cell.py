"""What a trtexec cell needs on the device beside the command: trtexec itself (installed there,
not deployed), its TensorRT version (which picks the flags), the engine cache folder and the
--exportTimes file read back after the run (edgebench/framework_tools/trtexec.py)."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

from edgebench.framework_tools.trtexec import (
    NOT_FOUND,
    TrtexecAdapter,
    TrtexecResult,
    engine_file_name,
    parse_export_times,
    tensorrt_version,
)
from edgebench.lab.remote import RemoteDevice, local_sha256
from edgebench.planning.cells import Cell


class TrtexecNotFound(Exception):
    """trtexec is neither in native_bin nor on the device (the message is NOT_FOUND)."""


def locate(device: RemoteDevice, adapter: TrtexecAdapter) -> str:
    """trtexec's path on the device: PATH, then JetPack's and TensorRT_HOME's bin folders."""
    candidates = " ".join(f'"{path}"' for path in adapter.device_locations)
    script = (
        f"command -v {shlex.quote(adapter.binary)} || "
        f'for f in {candidates}; do [ -x "$f" ] && echo "$f" && break; done; true'
    )
    found = device.transport.shell(script, timeout=30).stdout.strip().splitlines()
    if not found:
        raise TrtexecNotFound(NOT_FOUND)
    return found[0].strip()


def prepare(
    device: RemoteDevice, adapter: TrtexecAdapter, binary: str, cell: Cell, model: Path
) -> TrtexecAdapter:
    """The adapter for this device: its TensorRT major version, the cache folder and engine
    name (loaded when already there) and the exportTimes file."""
    probe = device.transport.shell(
        " ".join(shlex.quote(a) for a in adapter.version_command(binary)) + " 2>&1 | head -n 3",
        timeout=60,
    )
    found = tensorrt_version(probe.stdout)
    version, major = found if found else ("unknown", adapter.tensorrt_major)
    cache = device.path("cache", "tensorrt")
    shapes = {i["name"]: list(i["shape"]) for i in cell.inputs}
    name = engine_file_name(local_sha256(model), shapes, cell.precision, version)
    engine = f"{cache}/{name}"
    check = f"mkdir -p {shlex.quote(cache)} && test -f {shlex.quote(engine)} && echo cached; true"
    cached = "cached" in device.transport.shell(check, timeout=30).stdout
    return dataclasses.replace(
        adapter,
        tensorrt_major=major,
        cache_dir=cache,
        engine_name=name,
        engine_cached=cached,
        times_file=device.path("trtexec-times.json"),
    )


def add_times(device: RemoteDevice, adapter: TrtexecAdapter, result: TrtexecResult) -> None:
    """The exportTimes samples and stage split onto ``result`` (kept as the summary alone when
    the file is missing or broken)."""
    if adapter.times_file is None:
        return
    text = device.transport.read_many([adapter.times_file]).get(adapter.times_file)
    if not text:
        return
    try:
        result.add_times(parse_export_times(text, float(adapter.warmup_ms)))
    except ValueError as exc:
        result.raw_lines.append(str(exc))
