"""The emulated board's Debian mirror comes from the host's own apt sources, in either format."""

from __future__ import annotations

from pathlib import Path

from edgebench.lab.apt_sources import debian_mirror

DEB822 = """Types: deb
URIs: file:/srv/mirror/debian-security
Suites: bookworm-security
Components: main

Types: deb
# a comment line
URIs: file:/srv/mirror/debian/
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def test_the_stanza_that_carries_the_suite_gives_the_mirror(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(DEB822)
    assert debian_mirror("bookworm", tmp_path) == "file:/srv/mirror/debian"
    assert debian_mirror("trixie", tmp_path) is None


def test_one_line_entries_with_options_and_disabled_stanzas(tmp_path: Path) -> None:
    (tmp_path / "sources.list").write_text(
        "# deb file:/srv/old/debian bookworm main\n"
        "deb-src file:/srv/src/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/k.gpg] file:/srv/one/debian bookworm main\n"
    )
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "off.sources").write_text(
        "Types: deb\nURIs: file:/srv/off/debian\nSuites: bookworm\nEnabled: no\n"
    )
    assert debian_mirror("bookworm", tmp_path) == "file:/srv/one/debian"


def test_no_sources_at_all(tmp_path: Path) -> None:
    assert debian_mirror("bookworm", tmp_path) is None
