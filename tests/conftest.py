"""Registers the shared fixtures and hooks, which live in tests/fakes/ by job. Tests import
helpers from ``fakes.*`` (one import root), never from this file."""

pytest_plugins = [
    # First: it sets the shared-cache and Ray environment defaults before anything imports them.
    "fakes.environment",
    "fakes.models",
    "fakes.cli_checks",
    "fakes.adb_fixtures",
    "fakes.ssh_fixtures",
    "fakes.labs",
    "fakes.arm_board",
    "fakes.native_builds",
    "fakes.llm_models",
    "fakes.alone_scheduling",
]
