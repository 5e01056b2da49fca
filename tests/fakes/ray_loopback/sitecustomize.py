"""Loaded by the agent test's processes (PYTHONPATH): keeps Ray's head address on 127.0.0.1.

``ray start --address 127.0.0.1:PORT`` rewrites a loopback head address into the machine's
outward address, where a head started with ``node_ip_address=127.0.0.1`` does not listen (Ray
binds only to loopback then, which the tests need). Ray has no switch for this on a worker
node (its one knob, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, also refuses worker nodes), so the
test's processes keep the address as given. Nothing else of Ray changes.
"""

import os

if os.environ.get("EDGEBENCH_TEST_RAY_LOOPBACK") == "1":
    try:
        from ray._private import services
    except ImportError:  # not a process that uses Ray
        services = None
    if services is not None:
        services.resolve_ip_for_localhost = lambda host: host
