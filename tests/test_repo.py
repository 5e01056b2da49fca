"""The README's promises about how to install and test stay true, and the docs list what the
code has."""

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    return re.findall(r"```sh\n(.+?)\n```", text)


def test_ci_runs_exactly_the_readme_test_line():
    commands = readme_commands()
    test_line = next(c for c in commands if "pytest" in c)
    ci_lines = (REPO / ".ci" / "run").read_text().splitlines()
    assert test_line in ci_lines


def test_ci_installs_the_onnx2tf_toolchain_before_the_readme_test_line():
    """The README line alone downloads no TensorFlow (the onnx2tf tests skip without it); CI
    installs it first, so there they run."""
    test_line = next(c for c in readme_commands() if "pytest" in c)
    assert "toolchains install" not in test_line
    ci_lines = (REPO / ".ci" / "run").read_text().splitlines()
    installs = [
        i for i, line in enumerate(ci_lines) if "edgebench toolchains install tflite" in line
    ]
    assert installs and installs[-1] < ci_lines.index(test_line)


def test_readme_main_line_installs_and_runs_edgebench():
    main_line = readme_commands()[0]
    assert "pip install" in main_line and main_line.endswith("edgebench run")


def test_documented_stable_fields_exist_on_records():
    from edgebench.results.records import Record

    doc = (REPO / "docs" / "results.md").read_text()
    stable_section = doc.split("Other fields")[0]
    documented = re.findall(r"^\| `(\w+)` \|", stable_section, flags=re.M)
    assert len(documented) == 15
    names = set(Record.__dataclass_fields__)
    assert set(documented) <= names


def test_every_package_folder_is_listed_for_the_wheel():
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    folders = {v: k for k, v in config["package-dir"].items()}
    found = set()
    for top in ("edgebench", "converters", "runners", "device_profiles"):
        for init in (REPO / top).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO).as_posix()
            parts = rel.split("/")
            # Map the folder back to its package name through the closest package-dir entry.
            for cut in range(len(parts), 0, -1):
                base = "/".join(parts[:cut])
                if base in folders:
                    found.add(".".join([folders[base], *parts[cut:]]))
                    break
    assert found <= listed, f"missing from [tool.setuptools] packages: {sorted(found - listed)}"


def test_test_files_have_unique_names():
    """The tests folders have no __init__.py, so pytest imports each test file by its bare name:
    two files with one name in different folders stop the whole run at collection."""
    seen: dict[str, list[str]] = {}
    for path in (REPO / "tests").rglob("test_*.py"):
        seen.setdefault(path.name, []).append(path.relative_to(REPO).as_posix())
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}


def test_tests_import_helpers_from_fakes_never_from_conftest():
    """tests/conftest.py only registers tests/fakes/ modules as plugins; helpers are imported as
    ``fakes.*``, so each exists once, under one name."""
    pattern = re.compile(r"^\s*(?:from|import)\s+(?:conftest\b|tests\.fakes\b)", flags=re.M)
    offenders = [
        path.relative_to(REPO).as_posix()
        for path in (REPO / "tests").rglob("*.py")
        if pattern.search(path.read_text())
    ]
    assert offenders == []
    assert pattern.search("x = 1\n    from conftest import REPO\n")  # the check can see one
    assert pattern.search("from tests.fakes.records import sampled_record\n")
    assert not pattern.search("from fakes.records import sampled_record\n")


# --------------------------------------------------------------------------- docs vs the code


def plan_keys_accepted(tmp_path: Path) -> dict[str, set[str]]:
    """What ``load_plan`` accepts, read from its own unknown-key errors: "" -> the top-level
    keys that are not tables, and each table -> its keys."""
    from edgebench.errors import UserError
    from edgebench.planning.plan_file import load_plan

    def refused(text: str) -> str:
        path = tmp_path / "probe.toml"
        path.write_text(text)
        with pytest.raises(UserError) as err:
            load_plan(path)
        return str(err.value)

    def known(message: str) -> set[str]:
        assert "unknown key 'probe_key'" in message, message
        return set(message.split("known: ", 1)[1].split(", "))

    accepted: dict[str, set[str]] = {"": set()}
    for key in known(refused("probe_key = 1\n")):
        message = refused(f"[{key}]\nprobe_key = 1\n")
        if message.startswith(f"plan probe.toml: [{key}]: unknown key"):
            accepted[key] = known(message)
        else:
            accepted[""].add(key)
    return accepted


def test_configuration_doc_lists_exactly_the_plan_keys_the_code_accepts(tmp_path):
    accepted = plan_keys_accepted(tmp_path)
    assert {"sweep", "thresholds"} < set(accepted) and "lab" in accepted[""]  # the probe works
    doc = (REPO / "docs" / "configuration.md").read_text()
    plans = doc.split("## Plan files", 1)[1].split("\n\n")[1]  # its first paragraph
    assert set(re.findall(r"`\[(\w+)\]`", plans)) == set(accepted) - {""}
    assert set(re.findall(r"`(\w+)(?: = [^`]*)?`", plans)) == accepted[""]
    # The "plan key" column of "Every setting": `key` at the top level, `[table] key` in one.
    documented: dict[str, set[str]] = {"": {"schema", "name", "lab"}}
    for cell in re.findall(r"^\| \w+ \| `\w+` \| [^|]* \| ([^|]*) \|", doc, flags=re.M):
        if cell.strip() != "-":
            table, key = re.fullmatch(r"`(?:\[(\w+)\] )?(\w+)`", cell.strip()).groups()
            documented.setdefault(table or "", set()).add(key)
    assert documented == accepted


def test_results_doc_names_every_framework_and_precision():
    from edgebench.frameworks import framework_names
    from edgebench.planning.config import PRECISIONS
    from edgebench.planning.sweep_settings import LLM_WEIGHT_TYPES

    doc = (REPO / "docs" / "results.md").read_text()

    def row(field: str) -> set[str]:
        (meaning,) = re.findall(rf"^\| `{field}` \| str \| (.*) \|$", doc, flags=re.M)
        return set(re.findall(r"`([\w.-]+)`", meaning))

    assert row("framework") == set(framework_names())
    assert row("precision") == set(PRECISIONS) | set(LLM_WEIGHT_TYPES)


#: Package registries' and mirrors' hosts: the repository names none (sources come through the
#: package clients, the host's apt configuration or files the user provides). Written as parts,
#: so that this file does not name them either.
REGISTRY_HOSTS = tuple(
    ".".join(parts)
    for parts in (
        ("pypi", "org"),
        ("pythonhosted", "org"),
        ("deb", "debian", "org"),
        ("security", "debian", "org"),
        ("archive", "ubuntu", "com"),
        ("registry", "npmjs", "org"),
        ("download", "pytorch", "org"),
        ("anaconda", "org"),
    )
)


def test_the_repository_names_no_package_registry_host() -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.split(b"\0")
    found = []
    for name in filter(None, listed):
        path = REPO / name.decode()
        if not path.is_file() or path.stat().st_size > 2_000_000:
            continue
        text = path.read_bytes().decode("utf-8", errors="replace").lower()
        found += [f"{name.decode()}: {host}" for host in REGISTRY_HOSTS if host in text]
    assert found == []


def test_every_repository_path_the_docs_name_exists() -> None:
    """A file or folder named in backticks in README.md or docs/ (``edgebench/lab/remote.py``)
    is there: a move leaves no stale pointer behind. Placeholders (``<name>``, globs) are
    patterns, not paths."""
    named = re.compile(
        r"`((?:edgebench|tests|runners|converters|benchmarks|docs|device_profiles)/[\w./-]+)`"
    )
    missing = []
    for doc in [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            for match in named.finditer(line):
                path = match.group(1).rstrip(".,:")
                if not (REPO / path).exists():
                    missing.append(f"{doc.relative_to(REPO)}:{number}: {path}")
    assert not missing, "\n".join(missing)
