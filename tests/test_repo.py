"""The README's promises about how to install and test stay true."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    return re.findall(r"```sh\n(.+?)\n```", text)


def test_ci_runs_exactly_the_readme_test_line():
    commands = readme_commands()
    test_line = next(c for c in commands if "pytest" in c)
    ci_lines = (REPO / ".ci" / "run").read_text().splitlines()
    assert test_line in ci_lines


def test_readme_main_line_installs_and_runs_edgebench():
    main_line = readme_commands()[0]
    assert "pip install" in main_line and main_line.endswith("edgebench run")


def test_documented_stable_fields_exist_on_records():
    from edgebench.results.records import Record

    doc = (REPO / "docs" / "results.md").read_text()
    stable_section = doc.split("Other fields")[0]
    documented = re.findall(r"^\| `(\w+)` \|", stable_section, flags=re.M)
    assert len(documented) == 14
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
