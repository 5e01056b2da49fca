"""``edgebench publish``: the static nightly dashboard, one folder of self-contained pages.

``build`` reads the nightly series and writes the site; ``cell_pages`` and ``run_pages`` draw
the pages, ``charts`` their SVG, ``layout`` what the pages share; ``writer`` owns the folder
(its lock, atomic writes, the manifest that makes a rebuild write only what changed).
"""
