"""The host imports only ``edgebench.runners.protocol`` from the runner side (docs/ARCHITECTURE.md,
"Device side"): the definitions both sides agree on live there, and device behaviour stays in
the runner. The few host files that do reach further are listed below, each with why."""

import ast
import functools
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: Host folders and the package each is on the host.
HOST_FOLDERS = {"edgebench": "edgebench", "converters": "edgebench.converters", "benchmarks": None}
RUNNERS = "edgebench.runners"
PROTOCOL = f"{RUNNERS}.protocol"

#: (host file, runner module it imports) -> why it may.
ALLOWED = {
    # The package's folder, to find the native runner's C++ sources shipped in it: a file
    # location, no runner code runs.
    ("edgebench/builds/native_runner.py", RUNNERS): "the C++ sources' folder",
    # The package's folder, whose files are pushed to a device, and its module name for
    # ``python -m``: a file location, no runner code runs.
    ("edgebench/lab/runner_tree.py", RUNNERS): "the files pushed to a device",
    # The registry reads each backend module's declarations (REQUIRES, PIP_EXTRA,
    # NATIVE_ONLY, ACCELERATORS, OPTIONS), written once beside the backend so that adding a
    # framework is one runner file; reading them imports no framework.
    ("edgebench/frameworks/rows.py", f"{RUNNERS}.backends"): "backend modules' declarations",
    # These benchmarks measure the runner's own code (its backends and timed loops) in-process
    # on the host: the device code is what they time.
    ("benchmarks/harness_overhead.py", f"{RUNNERS}.backend_loader"): "times the runner's code",
    ("benchmarks/harness_overhead.py", f"{RUNNERS}.timing"): "times the runner's code",
    ("benchmarks/stage_timing.py", f"{RUNNERS}.backend_loader"): "times the runner's code",
    ("benchmarks/stage_timing.py", f"{RUNNERS}.timing"): "times the runner's code",
    (
        "benchmarks/openvino_clock_gap.py",
        f"{RUNNERS}.backend_loader",
    ): "reads two clocks on the runner's OpenVINO backend",
    # The host's own CUDA check before its GPU benchmarks: the runner's ctypes CUDA runtime,
    # run on the host's GPU.
    ("benchmarks/gpu_check.py", f"{RUNNERS}.cuda_runtime"): "the host's own CUDA check",
}


def imported_modules(source: str, module: str) -> set[str]:
    """Every module ``source`` (the module named ``module``) imports, as absolute names. From
    ``edgebench`` or ``edgebench.runners`` a name is a module (``from edgebench.runners import
    protocol``); from any deeper module, the names are that module's."""
    package = module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            if base in ("edgebench", RUNNERS):
                found.update(f"{base}.{alias.name}" for alias in node.names)
            else:
                found.add(base)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module":
            first = node.args[0] if node.args else None
            if isinstance(first, ast.JoinedStr) and first.values:
                first = first.values[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value.rstrip("."))
    return found


def runner_imports(source: str, module: str) -> set[str]:
    """The runner modules ``source`` imports that are not in the protocol package."""
    return {
        m
        for m in imported_modules(source, module)
        if (m == RUNNERS or m.startswith(RUNNERS + "."))
        and not (m == PROTOCOL or m.startswith(PROTOCOL + "."))
    }


def module_name(path: Path) -> str:
    rel = path.relative_to(REPO)
    package = HOST_FOLDERS[rel.parts[0]] or rel.parts[0]
    parts = [*package.split("."), *rel.with_suffix("").parts[1:]]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def host_runner_imports() -> dict[tuple[str, str], None]:
    found = {}
    for folder in HOST_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            for imported in runner_imports(path.read_text(), module_name(path)):
                found[(path.relative_to(REPO).as_posix(), imported)] = None
    return found


def test_the_host_imports_only_the_protocol_from_the_runner_but_the_allowed_few():
    found = host_runner_imports()
    outside = sorted(pair for pair in found if pair not in ALLOWED)
    assert not outside, "import these from edgebench.runners.protocol (or say why not): " + str(
        outside
    )


def test_every_allowed_import_is_still_made():
    stale = sorted(pair for pair in ALLOWED if pair not in host_runner_imports())
    assert not stale, f"drop these from ALLOWED: {stale}"


def test_the_scan_catches_a_runner_import_in_every_form():
    source = """
import edgebench.runners.sampler
from edgebench.runners.timing import run_window
from edgebench.runners import backends, protocol
from edgebench import runners
from ..runners.cell import CellFacts
importlib.import_module("edgebench.runners.proc")
importlib.import_module(f"edgebench.runners.backends.{name}")
"""
    assert runner_imports(source, "edgebench.converters.tool") == {
        "edgebench.runners.sampler",
        "edgebench.runners.timing",
        "edgebench.runners.backends",
        "edgebench.runners",
        "edgebench.runners.cell",
        "edgebench.runners.proc",
    }


def test_the_protocol_in_any_form_passes_the_scan():
    source = """
import edgebench.runners.protocol.spec
from edgebench.runners.protocol.tensors import make_inputs
from edgebench.runners import protocol
from edgebench.runners.protocol import result_parts
from ..runners.protocol import RESULT_PREFIX
"""
    assert runner_imports(source, "edgebench.converters.tool") == set()
