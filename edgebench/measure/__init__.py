"""Measuring: the run session, the per-device scheduler (rounds, retries, lost devices), the
measurement methods (``methods/``), the one record builder, the output check and progress.

Imports: planning, lab, analysis and results; never reporting or cli (the session shows its
results through a ``RunOutput`` the command line implements).
"""
