"""The lab: which devices exist and how to reach them.

The lab file, device profiles, core selections, the runner kinds and the choice among them,
devices and their facts, transports (local, ADB, SSH), host-side and on-device locks. Imports:
the base modules only (errors, paths, device_shell, builds, runners.protocol,
converters.isolation).
"""
