"""Planning: what a run will measure, decided before any device is measured.

The run configuration and plan files, model references, cells (device x model x framework x
sweep) and the conversions they need. Imports: the base modules, ``lab`` (devices and their
cores) and ``analysis.metrics`` (metric names for settings); nothing from measure, results,
reporting or cli.
"""
