"""The package layering written in docs/ARCHITECTURE.md holds in the code."""

import ast
from collections.abc import Set
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HOST = REPO / "edgebench"

#: Stage package -> the stage packages it may import. "base" is everything at the top of
#: edgebench/ (errors, paths, statuses, frameworks, agreement, models, quantization) plus
#: converters and runners.
MAY_IMPORT = {
    "base": {"base"},
    "results": {"base"},
    "analysis": {"base", "results"},
    "lab": {"base"},
    "planning": {"base", "lab", "analysis"},
    "measure": {"base", "lab", "planning", "analysis", "results"},
    "reporting": {"base", "analysis", "results"},
    "cluster": {"base", "lab", "planning", "measure", "analysis", "results"},
    "cli": {
        "base",
        "lab",
        "planning",
        "measure",
        "analysis",
        "results",
        "reporting",
        "cluster",
        "cli",
    },
}
STAGES = set(MAY_IMPORT) - {"base"}


def stage_of(module: str) -> str:
    if module == "edgebench.__main__":
        return "cli"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else "base"


def host_modules() -> dict[str, Path]:
    out = {}
    for path in HOST.rglob("*.py"):
        rel = path.relative_to(REPO).with_suffix("")
        out[".".join(rel.parts).removesuffix(".__init__")] = path
    return out


def imports_of(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.split(".")[0] == "edgebench"}


def test_stage_packages_import_only_downwards():
    wrong = []
    for module, path in host_modules().items():
        stage = stage_of(module)
        for target in imports_of(path):
            if stage_of(target) not in MAY_IMPORT[stage] | {stage}:
                wrong.append(f"{module} ({stage}) imports {target} ({stage_of(target)})")
    assert not wrong, "\n".join(sorted(wrong))


def test_converters_and_runners_do_not_import_the_host_stages():
    for top in ("converters", "runners"):
        for path in (REPO / top).rglob("*.py"):
            stages = {stage_of(t) for t in imports_of(path)} - {"base"}
            assert not stages, f"{path.relative_to(REPO)} imports host stages {stages}"


def test_runner_imports_nothing_from_the_host():
    for path in (REPO / "runners").rglob("*.py"):
        assert not imports_of(path), f"{path.relative_to(REPO)} imports edgebench"


def test_no_host_module_is_longer_than_500_lines():
    long = {
        str(p.relative_to(REPO)): n
        for p in HOST.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 500
    }
    assert not long, f"split these by job: {long}"


def test_no_runner_module_is_longer_than_500_lines():
    # The device folder is held to the host's rule: one job per module, runners/backends too.
    long = {
        str(p.relative_to(REPO)): n
        for p in (REPO / "runners").rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 500
    }
    assert not long, f"split these by job: {long}"


def test_host_vocabulary_covers_what_the_runner_reports():
    from edgebench.runners import protocol
    from edgebench.statuses import ErrorKind, Status

    assert set(protocol.ERROR_KINDS) <= set(ErrorKind)
    assert set(protocol.STATUSES) <= set(Status)


def runtime_imports_of(path: Path, modules: Set[str]) -> set[str]:
    """The edgebench modules ``path`` imports when it runs, wherever the statement is (one
    inside a function too: it hides a circle from Python, not from a reader). Imports under
    ``if TYPE_CHECKING:`` never run; ``from package import submodule`` imports the submodule
    (and the package only for names that are not submodules)."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
        for inner in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{a.name}" for a in node.names} & modules
            found |= submodules
            if len(submodules) < len(node.names):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found & modules


def import_cycles(package: str) -> list[list[str]]:
    """The import circles among ``package``'s modules (``runtime_imports_of``)."""
    modules = {m: p for m, p in host_modules().items() if m.startswith(package + ".")}
    names = set(modules)
    graph = {m: runtime_imports_of(p, names) - {m} for m, p in modules.items()}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in graph[module]:
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in graph:
        if module not in order:
            visit(module)
    return cycles


def test_no_module_of_edgebench_is_in_an_import_circle():
    assert import_cycles("edgebench") == []


def test_the_circle_check_sees_imports_that_run_and_only_those(tmp_path):
    module = tmp_path / "module.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "from edgebench.pkg import sub, NAME\n"
        "if TYPE_CHECKING:\n"
        "    from edgebench.typing_only import T\n"
        "def late():\n"
        "    from edgebench.late import f\n"
    )
    known = {"edgebench.pkg", "edgebench.pkg.sub", "edgebench.typing_only", "edgebench.late"}
    assert runtime_imports_of(module, known) == {
        "edgebench.pkg",  # for NAME, which is not a submodule
        "edgebench.pkg.sub",
        "edgebench.late",
    }
