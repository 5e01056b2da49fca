"""The lab: which devices exist and how to reach them.

The lab file, device profiles, core selections, devices and their facts, transports (local,
ADB, SSH), host-side and on-device locks. Imports: the base modules only (errors, paths,
runners.protocol, converters.isolation).
"""
