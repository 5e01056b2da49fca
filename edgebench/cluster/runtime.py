"""Everything that touches Ray: importing it quietly, joining a cluster, listing the devices
its nodes advertise, and calling a device's actor with a lost host turned into ``HostLost``.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Any

from edgebench.cluster.host_actor import DeviceHost, Opener
from edgebench.cluster.naming import DeviceInfo, devices_of_node, resource_name
from edgebench.errors import UserError

log = logging.getLogger(__name__)

#: Ray's namespace for edgebench's actors.
NAMESPACE = "edgebench"
#: Environment that keeps Ray from reporting usage or starting its dashboard.
QUIET_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_DISABLE_DOCKER_CPU_WARNING": "1",
    "RAY_BACKEND_LOG_LEVEL": "error",  # the driver's C++ core logs only errors to stderr
}
#: How long the head's port may take to accept before the address is called unreachable.
REACH_TIMEOUT_S = 10.0
INSTALL_HINT = "pip install 'edgebench[cluster]'"


def import_ray() -> Any:
    """Ray, with its usage reporting off; a one-line error when it is not installed."""
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    try:
        import ray
    except ImportError:
        raise UserError(f"--cluster needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def check_reachable(address: str) -> None:
    """A one-line error at once for an address nothing listens on (Ray itself retries for
    minutes before it gives up)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise UserError(f"--cluster {address!r}: give the Ray head as host:port (e.g. lab0:6379)")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_TIMEOUT_S):
            pass
    except OSError as exc:
        raise UserError(
            f"cannot reach the Ray head at {address}: {exc.strerror or exc}; start it with "
            "`ray start --head` on the head host (docs/cluster.md)"
        ) from None


def connect(address: str) -> Any:
    """Join the cluster at ``address`` (host:port of its head) as a driver."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    check_reachable(address)
    try:
        ray.init(
            address=address,
            namespace=NAMESPACE,
            logging_level=logging.WARNING,
            log_to_driver=False,
            configure_logging=False,
        )
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise UserError(
            f"cannot join the Ray cluster at {address}: {str(exc).splitlines()[0]}; start its "
            "head with `ray start --head` (docs/cluster.md), and run edgebench on a host that "
            "is a node of it"
        ) from None
    return ray


def cluster_devices() -> list[DeviceInfo]:
    """Every device the cluster's live nodes advertise."""
    ray = import_ray()
    devices = []
    for node in ray.nodes():
        if node.get("Alive"):
            devices += devices_of_node(node.get("Resources") or {}, node.get("Labels") or {})
    return devices


class HostLost(Exception):
    """The actor of a device is gone: its lab host left the cluster (or died)."""


class NoAnswer(HostLost):
    """The actor did not answer in time (not placed yet, or its host is unresponsive)."""


def _lost_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """Ray's exceptions for an actor that died or cannot be reached."""
    exceptions = ray.exceptions
    return tuple(
        getattr(exceptions, name)
        for name in ("RayActorError", "ActorDiedError", "ActorUnavailableError", "NodeDiedError")
        if hasattr(exceptions, name)
    )


class ActorLink:
    """The submitting host's handle on one device's actor."""

    def __init__(self, info: DeviceInfo, opener: Opener | None = None) -> None:
        ray = import_ray()
        self.ray = ray
        self.info = info
        self.lost_errors = _lost_errors(ray)
        actor_class = ray.remote(DeviceHost)
        self.actor = actor_class.options(
            num_cpus=0,
            resources={resource_name(info.name): 1.0},
            max_restarts=0,
            max_concurrency=4,  # abort and renew_lock run beside a visit
            name=None,
        ).remote(info.name, opener)

    def call(self, method: str, *args: Any, timeout: float | None = None) -> Any:
        """``actor.method(*args)``, waited for; HostLost when the actor's host is gone."""
        ref = getattr(self.actor, method).remote(*args)
        try:
            return self.ray.get(ref, timeout=timeout)
        except self.lost_errors as exc:
            raise HostLost(self._lost_reason(exc)) from None
        except self.ray.exceptions.GetTimeoutError:
            raise NoAnswer(
                f"lab host {self.info.host} did not answer for {timeout:.0f} s ({self.info.name})"
            ) from None
        except self.ray.exceptions.RayTaskError as exc:
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            raise cause from None

    def send(self, method: str, *args: Any) -> None:
        """``actor.method(*args)`` without waiting (abort)."""
        try:
            getattr(self.actor, method).remote(*args)
        except Exception as exc:  # the actor may be gone already
            log.debug("could not send %s to %s: %s", method, self.info.name, exc)

    def put(self, data: bytes) -> Any:
        return self.ray.put(data)

    def kill(self) -> None:
        try:
            self.ray.kill(self.actor, no_restart=True)
        except Exception as exc:
            log.debug("could not stop the actor of %s: %s", self.info.name, exc)

    def _lost_reason(self, exc: BaseException) -> str:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"lab host {self.info.host} lost ({self.info.name}): {first[:200]}"


def shutdown() -> None:
    ray = import_ray()
    if ray.is_initialized():
        ray.shutdown()
