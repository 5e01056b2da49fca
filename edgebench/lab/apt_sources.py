"""The Debian mirror this host's apt already uses, read from its sources files, so that the
emulated board's root comes from the same place as the host's own packages (and edgebench
names no mirror of its own).

Both formats: one-line ``deb URI SUITE COMPONENT...`` in ``sources.list`` and ``*.list``, and
deb822 stanzas (``Types``/``URIs``/``Suites``) in ``*.sources``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)

APT_DIR = Path("/etc/apt")


def source_files(apt_dir: Path = APT_DIR) -> list[Path]:
    listed = [apt_dir / "sources.list"]
    folder = apt_dir / "sources.list.d"
    if folder.is_dir():
        listed += sorted(p for p in folder.iterdir() if p.suffix in (".list", ".sources"))
    return [p for p in listed if p.is_file()]


def _one_line_entries(text: str) -> Iterator[tuple[str, list[str]]]:
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) >= 3 and words[0] == "deb":
            rest = words[1:]
            if rest[0].startswith("["):  # options: deb [arch=amd64 signed-by=...] URI ...
                while rest and not rest[0].endswith("]"):
                    rest = rest[1:]
                rest = rest[1:]
            if len(rest) >= 2:
                yield rest[0], [rest[1]]


def _deb822_entries(text: str) -> Iterator[tuple[str, list[str]]]:
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[:1].isspace():
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        if "deb" not in fields.get("types", "").split():
            continue
        if fields.get("enabled", "yes").lower() == "no":
            continue
        for uri in fields.get("uris", "").split():
            yield uri, fields.get("suites", "").split()


def debian_mirror(suite: str, apt_dir: Path = APT_DIR) -> str | None:
    """The first URI whose entry carries ``suite`` itself (not -updates or -security), or
    None when the host's apt names none."""
    for path in source_files(apt_dir):
        try:
            text = path.read_text(errors="replace")
        except OSError as exc:
            log.debug("cannot read %s: %s", path, exc)
            continue
        entries = _deb822_entries(text) if path.suffix == ".sources" else _one_line_entries(text)
        for uri, suites in entries:
            if suite in suites:
                return uri.rstrip("/")
    return None
