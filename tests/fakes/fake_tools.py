"""Fake framework tools for the emulated phone: shell scripts that print a real tool's output
(tests/fakes/tool_outputs.py) and check that their command line carries what the cell needs.

A fake refuses (exit 2, naming what it missed) unless every expected word is one of its
arguments, so a test through it proves the adapter's command line as well as the parsing.
``@MODEL@`` in the output becomes the model's label the way the real tool prints it.
"""

from __future__ import annotations

import re
from pathlib import Path

_PLAIN_WORD = re.compile(r"[A-Za-z0-9_=./-]+")

#: How each tool labels its result: a shell expression over the tool's arguments.
_LABELS = {
    # benchncnn prints the param= path as given.
    "benchncnn": 'for a in "$@"; do case "$a" in param=*) label="${a#param=}";; esac; done',
    # benchmark.out prints each file name in the folder it was given.
    "benchmark.out": 'label="$(ls "$1" | head -n 1)"',
    # TNNTest prints the -mp file's name.
    "TNNTest": 'prev=; for a in "$@"; do [ "$prev" = -mp ] && label="${a##*/}"; prev="$a"; done',
    "benchmark_model": "label=",
}


def write_fake_tool(
    folder: Path,
    tool: str,
    *,
    expect: list[str],
    stdout: str = "",
    stderr: str = "",
    exit_code: int = 0,
) -> Path:
    """Write ``folder/tool``: checks ``expect`` against its arguments, then prints ``stdout``
    and ``stderr`` (``@MODEL@`` replaced by the label) and exits with ``exit_code``."""
    folder.mkdir(parents=True, exist_ok=True)
    assert all(_PLAIN_WORD.fullmatch(word) for word in expect), expect
    checks = "\n".join(
        f'case " $* " in *" {word} "*) ;; '
        f'*) echo "fake {tool}: expected {word} in: $*" >&2; exit 2;; esac'
        for word in expect
    )
    script = "\n".join(
        [
            "#!/bin/sh",
            checks,
            "label=",
            _LABELS[tool],
            _emit(stdout, ""),
            _emit(stderr, " >&2"),
            f"exit {exit_code}",
            "",
        ]
    )
    path = folder / tool
    path.write_text(script)
    path.chmod(0o755)
    return path


def _emit(text: str, redirect: str) -> str:
    if not text:
        return ":"
    return f"sed \"s|@MODEL@|$label|g\" <<'OUTPUT'{redirect}\n{text.rstrip(chr(10))}\nOUTPUT"
