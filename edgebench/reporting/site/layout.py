"""What every dashboard page shares: the page shell (a Content Security Policy that lets nothing
load, inline CSS, the navigation), where each page lives, and the bits of text several pages
show (a night's date, a step's size, a cell's name).

File names come from ``paths.safe_file_name``: a device called ``../x`` or ``<script>`` gives
a page inside the site with a hashed name, never a path outside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from edgebench import __version__
from edgebench.analysis.metrics import Metric
from edgebench.paths import safe_file_name
from edgebench.reporting.site.charts import is_regression
from edgebench.reporting.svg import esc
from edgebench.reporting.tables import fmt_number

if TYPE_CHECKING:
    from edgebench.analysis.nightly import CellHistory, Night, Step

#: Nothing may be loaded from anywhere: inline styles only, images as data: at most, no scripts.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:20px 24px;
color:#222;background:#fff}
h1{font-size:22px;margin:0 0 6px}h2{font-size:18px;margin:26px 0 8px;border-bottom:1px solid #ccc}
nav{margin:0 0 14px;font-size:13px}nav a{margin-right:14px}
a{color:#1a5fb4}
table{border-collapse:collapse;margin:4px 0 12px}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}
table.grid td{padding:3px}table.grid th.dev{border-left:3px solid #999}.slot{display:flex;gap:4px}
a.tile{display:block;width:158px;padding:4px 6px;border:1px solid #ccd;border-radius:4px;
color:#222;text-decoration:none;background:#fafbfd}
a.tile:hover{border-color:#1a5fb4}
a.tile.worse{border-left:5px solid #c0392b;background:#fdf1ef}
a.tile.better{border-left:5px solid #2e8b57}
a.tile.failed{background:#fbeaea}
.tile .val{font-weight:600}.tile .series{color:#555;font-size:12px}
.tile .step{font-size:12px}
.worse-text{color:#c0392b;font-weight:600}.better-text{color:#2e8b57;font-weight:600}
.muted{color:#777}.small{font-size:12px}
ul.facts{margin:0;padding-left:16px}
svg text{font:11px sans-serif;fill:#333}
"""


@dataclass
class SiteCell:
    """One cell series of the dashboard: its history and the page it gets."""

    history: CellHistory

    @property
    def page(self) -> str:
        key = self.history.key
        return f"cells/{cell_file(key.device, key.model, key.engine, key.series)}"


def cell_file(device: str, model: str, engine: str, series: str) -> str:
    """A cell page's file name: always hashed ("~" is no safe character), so that no two
    cells share one whatever their names hold."""
    return safe_file_name("~".join((device, model, engine, series))) + ".html"


def run_page(run_id: str) -> str:
    return f"runs/{safe_file_name(run_id)}.html"


def report_page(run_id: str) -> str:
    return f"reports/{safe_file_name(run_id)}.html"


def shell(title: str, body: str, *, depth: int = 0, subtitle: str = "") -> str:
    """A whole page: ``depth`` is how many folders below the site's root the page lives."""
    root = "../" * depth
    nav = (
        f'<nav><a href="{root}index.html">Overview</a>'
        f'<a href="{root}regressions.html">Regressions</a>'
        f'<a href="{root}runs.html">Runs</a></nav>'
    )
    sub = f'<p class="muted">{subtitle}</p>' if subtitle else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f'<meta name="generator" content="edgebench {esc(__version__)}">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>\n"
        f"<body>{nav}<h1>{esc(title)}</h1>{sub}\n{body}\n</body></html>\n"
    )


def night_date(night: Night) -> str:
    return (night.created_at or night.run_id)[:10]


def latest_value(history: CellHistory) -> Night | None:
    """The newest night of the cell that has a value."""
    return next((n for n in reversed(history.nights) if n.value is not None), None)


def step_text(step: Step, metric: Metric) -> str:
    """A step's size with its interval, coloured by whether it is a regression (HTML)."""
    cp = step.change_point
    worse = is_regression(cp.change, metric.lower_is_better)
    cls = "worse-text" if worse else "better-text"
    return (
        f'<span class="{cls}">{cp.change:+.1%}</span> '
        f'<span class="muted small">({cp.change_low:+.1%} to {cp.change_high:+.1%})</span>'
    )


def level_text(step: Step, metric: Metric) -> str:
    cp = step.change_point
    return f"{fmt_number(cp.before)} → {fmt_number(cp.after, metric.bare_unit)}"


def changed_list(step: Step) -> str:
    """What changed that night, as a list (HTML), or a muted "nothing recorded"."""
    if not step.changed:
        return '<span class="muted">no recorded fact changed</span>'
    items = "".join(
        f"<li><b>{esc(name)}</b>: {esc(before)} → {esc(after)}"
        + (f' <span class="muted">{esc(step.when(name))}</span>' if step.when(name) else "")
        + "</li>"
        for name, (before, after) in step.changed.items()
    )
    return f'<ul class="facts">{items}</ul>'


def cell_name(history: CellHistory) -> str:
    return history.key.label()
