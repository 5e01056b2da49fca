"""Everything that touches Ray: importing it quietly, joining a cluster, listing the devices
its nodes advertise, and calling a device's actor with a lost host turned into ``HostLost``.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from edgebench.cluster.head_probe import head_nodes
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
#: How often a client waiting on a device says so (placement, the device's locks).
WAIT_REPORT_S = 60.0
#: How long a call may go unanswered before the client looks at what it waits for.
WAIT_CHECK_S = 5.0
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


def connect(address: str) -> Any:
    """Join the cluster at ``address`` (host:port of its head) as a driver."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    head_nodes(address)  # a bounded probe: Ray's own client waits minutes on a wrong address
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


@functools.cache
def _device_host_class(ray: Any) -> Any:
    """``DeviceHost`` as a Ray actor class, made once: Ray exports a class made anew to the
    cluster again (pickled and disassembled for its identity), about 0.4 s of this host's CPU
    per device on 2 cores. Ray exports the one class again by itself for a new cluster."""
    return ray.remote(DeviceHost)


class ActorLink:
    """The submitting host's handle on one device's actor."""

    def __init__(self, info: DeviceInfo, opener: Opener | None = None) -> None:
        ray = import_ray()
        self.ray = ray
        self.info = info
        self.lost_errors = _lost_errors(ray)
        actor_class = _device_host_class(ray)
        self.actor = actor_class.options(
            num_cpus=0,
            resources={resource_name(info.name): 1.0},
            max_restarts=0,
            max_concurrency=4,  # abort and renew_lock run beside a visit
            name=None,
        ).remote(info.name, opener)

    def call(self, method: str, *args: Any, timeout: float | None = None) -> Any:
        """``actor.method(*args)``, waited for; HostLost when the actor's host is gone."""
        return self._get(getattr(self.actor, method).remote(*args), timeout)

    def call_waiting(
        self,
        method: str,
        *args: Any,
        timeout: float,
        report: Callable[[str], None],
        every_s: float = WAIT_REPORT_S,
    ) -> Any:
        """``call``, for a call that may wait (the actor's placement, a device's lock): while
        it waits, one line says what for, first after ``WAIT_CHECK_S``, then every
        ``every_s``."""
        ref = getattr(self.actor, method).remote(*args)
        started = time.monotonic()
        deadline = started + timeout
        said: tuple[str, float] | None = None  # the last line and when
        asking: Any = None  # the actor's answer to "what are you waiting for?", pending
        while True:
            now = time.monotonic()
            ready, _ = self.ray.wait([ref], timeout=max(0.0, min(WAIT_CHECK_S, deadline - now)))
            if ready:
                return self._get(ref, None)
            if time.monotonic() >= deadline:
                raise self._no_answer(timeout)
            if asking is None:
                asking = self.actor.waiting.remote()
            answered, _ = self.ray.wait([asking], timeout=min(WAIT_CHECK_S, 2.0))
            if answered:
                waiting_for = self._get(asking, 0)
                asking = None
            else:
                waiting_for = self._unplaced()  # a placed actor answers at once
            now = time.monotonic()
            if waiting_for and (said is None or said[0] != waiting_for or now - said[1] >= every_s):
                report(f"{waiting_for} ({now - started:.0f} s so far)")
                said = (waiting_for, now)

    def _unplaced(self) -> str:
        """What an actor that does not answer yet waits for (another run's actor may hold the
        device's resource, or Ray is still starting this one)."""
        return (
            f"device {self.info.name}: waiting for its actor to be placed and started on lab "
            f"host {self.info.host} (Ray resource {resource_name(self.info.name)})"
        )

    def _get(self, ref: Any, timeout: float | None) -> Any:
        try:
            return self.ray.get(ref, timeout=timeout)
        except self.lost_errors as exc:
            raise HostLost(self._lost_reason(exc)) from None
        except self.ray.exceptions.GetTimeoutError:
            raise self._no_answer(timeout or 0.0) from None
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

    def _no_answer(self, timeout: float) -> NoAnswer:
        return NoAnswer(
            f"lab host {self.info.host} did not answer for {timeout:.0f} s ({self.info.name})"
        )

    def _lost_reason(self, exc: BaseException) -> str:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"lab host {self.info.host} lost ({self.info.name}): {first[:200]}"


def shutdown() -> None:
    ray = import_ray()
    if ray.is_initialized():
        ray.shutdown()
