"""edgebench on-device runner: one JSON spec in, one JSON result out.

Usage, on a device (the runner folder as edgebench pushes it: this package as
``edgebench_runner/`` beside the entry script ``launcher.py``, pushed as ``runner.py``):
    python3 runner.py SPEC.json        (or "-" to read the spec from stdin)
    python3 runner.py '{"schema": ...}' (the spec itself, as one argument)
    python3 runner.py --probe          (which frameworks this device can run)
and on the host, ``python -m edgebench.runners ARG``.

Self-contained on purpose: Python 3.8+, the standard library, numpy and the framework under test.
It imports nothing from the host package: this package (the runner's modules, protocol/, what
host and runner share, and backends/) is copied to a phone or a board and run there. The spec
is ``protocol.spec.RunSpec``; one cell is measured by ``cell.measure_cell``. The result, written
through ``protocol.run_result.RunResult``, is the last line on stdout, prefixed with
``RESULT_PREFIX``; anything the framework prints goes to stderr (stdout is redirected during the
run so native logging cannot corrupt the result).
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import sys
from typing import Any, Dict, List, Optional

from .accelerators import finish_probe, start_probe
from .backend_loader import instantiate
from .backends import MODULE_SUFFIX, discover, options_type
from .cell import CellFacts, measure_cell
from .emulation import detect as detect_emulation
from .proc import effective_cores, peak_rss_kb
from .protocol import PROBE_SCHEMA, status_of
from .protocol.devices import boot_id
from .protocol.errors import BackendError
from .protocol.spec import RunSpec, SpecError
from .result import (
    checked,
    error_fields,
    internal_error,
    new_result,
    out_of_memory,
    result_line,
)


def execute(raw_spec: Any) -> Dict[str, Any]:
    """The result of the cell ``raw_spec`` (a decoded JSON object) asks for; never raises."""
    result = new_result(raw_spec)
    facts = CellFacts()
    try:
        spec = RunSpec.from_json(raw_spec, options_type)
        result.update(new_result(spec.to_json()))
        measure_cell(spec, facts)
    except SpecError as exc:
        result["error"] = error_fields("bad_spec", str(exc), "")
    except BackendError as exc:
        result["status"] = status_of(exc.kind)
        result["error"] = error_fields(exc.kind, exc.message, exc.detail)
    except MemoryError as exc:
        result["error"] = out_of_memory(exc)
    except Exception as exc:
        result["error"] = internal_error(exc)
    result.update(facts.result_fields())
    if result.get("peak_rss_kb") is None:
        result["peak_rss_kb"] = peak_rss_kb()
    return checked(result, raw_spec)


def probe() -> Dict[str, Any]:
    """Which frameworks this device can run (and their versions), and what the device is:
    its accelerators too, asked in a child process meanwhile (a crashing driver costs only
    those)."""
    accelerator_probe = start_probe()
    found, broken = discover()
    frameworks: Dict[str, Dict[str, Any]] = {}
    for name, declared in found.items():
        try:
            backend = instantiate(declared)
            frameworks[name] = {"available": True, "version": backend.version()}
        except BackendError as exc:
            frameworks[name] = {"available": False, "reason": exc.kind, "message": exc.message}
        except Exception as exc:  # a framework that crashes on import is unavailable, not fatal
            frameworks[name] = {"available": False, "reason": "import_error", "message": str(exc)}
        frameworks[name]["generative"] = declared.generative  # runs generative models only
    for module_name, message in broken.items():  # named after its file: FRAMEWORK was unreadable
        name = module_name[: -len(MODULE_SUFFIX)]
        unreadable = {"available": False, "reason": "import_error", "message": message}
        frameworks.setdefault(name, unreadable)
    try:
        numpy_version = importlib.import_module("numpy").__version__
    except ImportError:
        numpy_version = None
    emulated, evidence = detect_emulation()
    return {
        "schema": PROBE_SCHEMA,
        "python": platform.python_version(),
        "numpy": numpy_version,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "affinity": effective_cores(),
        "frameworks": frameworks,
        "emulated": emulated,
        "emulation": evidence,
        "boot_id": boot_id(),
        "accelerators": finish_probe(accelerator_probe),
    }


def read_spec(argument: str) -> Any:
    """The spec object from stdin (``-``), the argument itself, or the file it names."""
    if argument == "-":
        return json.load(sys.stdin)
    if argument.lstrip().startswith("{"):
        return json.loads(argument)
    with open(argument) as fh:
        return json.load(fh)


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        sys.stderr.write(__doc__ or "")
        return 2
    # Keep the real stdout for the result; send everything else (native logs too) to stderr.
    result_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if argv[0] == "--probe":
        payload = probe()
    else:
        try:
            raw = read_spec(argv[0])
        except (OSError, ValueError) as exc:
            payload = new_result(None)
            payload["error"] = error_fields("bad_spec", "cannot read spec: %s" % exc)
        else:
            payload = execute(raw)
    sys.stderr.flush()
    with os.fdopen(result_fd, "w") as out:
        out.write(result_line(payload))
    return 0
