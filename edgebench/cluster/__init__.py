"""Several lab hosts as one lab, on Ray: ``edgebench agent`` on each host that owns devices,
``edgebench run --cluster ADDRESS`` from any host.

Only this package imports Ray, and only ``cli`` imports this package, when ``--cluster`` or the
``agent`` command is used: a plain run neither imports nor needs Ray. See docs/cluster.md.
"""
