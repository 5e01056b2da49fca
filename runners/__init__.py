"""What runs on the device: ``runner.py`` and its framework backends, and ``protocol/``, the
definitions the host and the device share (the host imports nothing else of this package).

The host treats this folder as files to execute or copy to a device; nothing here imports the
host package, and ``runner.py`` must stay runnable with Python 3.8 and numpy alone.
"""
