"""The HTML report's style sheet (inline in the page: nothing is fetched)."""

#: Everything but the breakdown sections (reporting.breakdowns) and the summary.
PAGE_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222;
background:#fff}
h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ccc}
h3{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;margin:4px 0 12px}
th,td{border:1px solid #bbb;padding:4px 8px;text-align:right}
th{background:#f2f2f2}td.dev,th.dev{text-align:left}
table.meta td,table.meta th{text-align:left}
td.cell a{color:inherit;text-decoration:none}
td.st{color:#333;font-weight:600;text-align:center;
background:repeating-linear-gradient(45deg,#ddd 0 6px,#f4f4f4 6px 12px)}
td.st-failed,td.st-mismatch{color:#a00;
background:repeating-linear-gradient(45deg,#f3c6c6 0 6px,#fbeaea 6px 12px)}
td.empty{background:#fafafa}
td.emu{color:#1d3f6e;background:repeating-linear-gradient(135deg,#c9d8ef 0 6px,#eef3fa 6px 12px)}
.emu-label{display:inline-block;margin-left:4px;padding:0 3px;border-radius:3px;font-size:10px;
font-weight:600;color:#1d3f6e;background:#fff;border:1px solid #9fb4d6}
.heat{display:flex;flex-wrap:wrap;gap:18px}.heat>div{flex:0 0 auto}
.cap{font-weight:600;font-size:13px}
details{border:1px solid #ccc;border-radius:4px;margin:8px 0;padding:4px 10px}
summary{cursor:pointer;font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:12px}
.status{display:inline-block;padding:0 6px;border-radius:3px;font-size:12px;background:#ddd}
.status.ok{background:#cdeccd}.status.failed,.status.mismatch{background:#f3c6c6}
.status.emu{background:repeating-linear-gradient(135deg,#c9d8ef 0 4px,#eef3fa 4px 8px)}
.err{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:12px;background:#f8f8f8;
padding:6px}
svg text{font:11px sans-serif;fill:#333}
.muted{color:#777}
"""

#: The summary and the notes: the answer table beside its chart, folded sections.
SUMMARY_CSS = """
table.answer td,table.answer th{text-align:left;vertical-align:top}
table.answer td.model{font-weight:600}table.answer{max-width:1100px}
sup.ref{font-size:10px;margin-left:1px}sup.ref a{color:#1f5fa8;text-decoration:none}
ol.notes{font-size:12px;color:#555;margin:2px 0 10px;padding-left:28px}
ol.notes li:target{background:#fff3c4}
details.fold{background:#fafafa}details.fold>summary{font-weight:400;color:#444}
"""
