"""The HTML report's notes, each given once: a note is numbered the first time a part of the
page points to it, listed where that part ends, and only pointed to after that.

Stage boundaries, the emulated-CPU rule and the ranking rule used to be repeated under every
table they applied to; now a table carries a numbered reference to them instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from edgebench.reporting.svg import esc


@dataclass
class Notes:
    """Numbered notes of one page, in order of first use."""

    _numbers: dict[str, int] = field(default_factory=dict)
    #: Notes numbered since the last ``listing``: not yet given on the page.
    _unlisted: list[str] = field(default_factory=list)

    def number(self, text: str) -> int:
        """The note's number, given it when it has none yet."""
        if text not in self._numbers:
            self._numbers[text] = len(self._numbers) + 1
            self._unlisted.append(text)
        return self._numbers[text]

    def ref(self, text: str) -> str:
        """A superscript link to the note (HTML)."""
        n = self.number(text)
        return f'<sup class="ref"><a href="#note-{n}">[{n}]</a></sup>'

    def refs(self, texts: list[str]) -> str:
        return "".join(self.ref(t) for t in dict.fromkeys(texts))

    def listing(self, lead: str = "") -> str:
        """The notes numbered since the last listing, as a numbered list ("" when none)."""
        if not self._unlisted:
            return ""
        items = "".join(
            f'<li id="note-{self._numbers[t]}" value="{self._numbers[t]}">{esc(t)}</li>'
            for t in self._unlisted
        )
        self._unlisted = []
        head = f'<p class="muted">{esc(lead)}</p>' if lead else ""
        return f'{head}<ol class="notes">{items}</ol>'
