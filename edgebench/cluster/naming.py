"""How a lab host tells the cluster which devices it owns: Ray node resources and labels.

Each reachable device is one custom resource, ``edgebench-device:<name>`` with capacity 1, so
Ray places at most one device actor on it, and only on the node that owns it. The facts a
selector matches (profile, SoC, ABI, transport, host) travel as node labels, numbered per
device: ``edgebench-dev0-name``, ``edgebench-dev0-profile``, ... A node's resources and labels
are fixed while it runs; the agent restarts its node when its devices change.

Nothing here imports Ray.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from edgebench.errors import UserError

RESOURCE_PREFIX = "edgebench-device:"
HOST_LABEL = "edgebench-host"
VERSION_LABEL = "edgebench-version"
#: The facts a device selector may name (``--devices profile=kirin-9000``).
SELECTOR_KEYS = ("name", "host", "profile", "soc", "abi", "transport")
#: Every fact a device's labels carry; ``identity`` tells two lab entries for one device apart.
FACT_KEYS = (*SELECTOR_KEYS, "identity")
#: Ray's label syntax (Kubernetes'): 63 characters at most, alphanumeric at both ends.
_LABEL_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?")
#: ``uname -m`` and Android's ABI names for the same instruction sets.
_ABI_ALIASES = {"arm64-v8a": "aarch64", "arm64": "aarch64", "amd64": "x86_64", "x86-64": "x86_64"}


def label_value(text: str | None) -> str:
    """``text`` in label syntax: other characters become ``-``, cut to 63, ends trimmed
    ("Snapdragon 8 Gen 2" -> "Snapdragon-8-Gen-2"); "" for nothing."""
    value = re.sub(r"[^A-Za-z0-9_.-]+", "-", text or "")[:63]
    return value.strip("-_.")


def is_label_safe(name: str) -> bool:
    return _LABEL_RE.fullmatch(name) is not None


def resource_name(device: str) -> str:
    return RESOURCE_PREFIX + device


def identity_label(identity: str) -> str:
    """A lab entry's identity ("this machine", "ssh orin:22") as a label value; a long one
    keeps a digest of the whole, so two identities never share a label."""
    value = label_value(identity)
    if len(value) < 48:
        return value
    return f"{value[:40].strip('-_.')}-{hashlib.sha256(identity.encode()).hexdigest()[:16]}"


@dataclass(frozen=True)
class DeviceInfo:
    """One device of the cluster as its host advertises it."""

    name: str
    host: str
    profile: str = ""
    soc: str = ""
    abi: str = ""
    transport: str = ""
    #: Which device the lab entry reaches (``identity_label``): two entries of one host with
    #: the same identity are two names for one device.
    identity: str = ""

    def matches(self, key: str, value: str) -> bool:
        have = getattr(self, key)
        if key == "abi":
            have, value = _abi(have), _abi(value)
        return label_value(have).lower() == label_value(value).lower()

    def describe(self) -> str:
        facts = [f"{k} {v}" for k, v in asdict(self).items() if k in SELECTOR_KEYS[2:] and v]
        return f"{self.name} on {self.host}" + (f" ({', '.join(facts)})" if facts else "")


def _abi(value: str) -> str:
    return _ABI_ALIASES.get(value.lower(), value.lower())


def advertisement(
    host: str, devices: Sequence[DeviceInfo], version: str
) -> tuple[dict[str, float], dict[str, str]]:
    """The resources and labels a host's Ray node starts with."""
    resources = {resource_name(d.name): 1.0 for d in devices}
    labels = {HOST_LABEL: label_value(host), VERSION_LABEL: label_value(version)}
    for index, device in enumerate(devices):
        for key, value in asdict(device).items():
            if key != "host" and value:
                labels[f"edgebench-dev{index}-{key}"] = label_value(value)
    return resources, labels


def devices_of_node(resources: Mapping[str, float], labels: Mapping[str, str]) -> list[DeviceInfo]:
    """The devices one node advertises (the inverse of ``advertisement``)."""
    host = labels.get(HOST_LABEL, "")
    by_index: dict[int, dict[str, str]] = {}
    for key, value in labels.items():
        found = re.fullmatch(r"edgebench-dev(\d+)-([a-z]+)", key)
        if found and found.group(2) in FACT_KEYS:
            by_index.setdefault(int(found.group(1)), {})[found.group(2)] = value
    owned = {key[len(RESOURCE_PREFIX) :] for key in resources if key.startswith(RESOURCE_PREFIX)}
    devices = []
    for index in sorted(by_index):
        facts = by_index[index]
        if facts.get("name") in owned:
            devices.append(DeviceInfo(host=host, **facts))
    # A device resource without labels (a node started by hand): known by name only.
    labelled = {d.name for d in devices}
    devices += [DeviceInfo(name, host) for name in sorted(owned - labelled)]
    return devices


def choose_devices(wanted: Sequence[str], available: Sequence[DeviceInfo]) -> list[DeviceInfo]:
    """The devices ``--devices`` names, in the order given: a name, or ``key=value`` for every
    device whose fact matches (``profile=kirin-9000``, ``host=lab2``, ``abi=aarch64``)."""
    chosen: dict[str, DeviceInfo] = {}
    for item in wanted:
        if "=" in item:
            key, _, value = (part.strip() for part in item.partition("="))
            if key not in SELECTOR_KEYS:
                raise UserError(
                    f"device selector {item!r}: unknown key {key!r}; use one of "
                    f"{', '.join(SELECTOR_KEYS)} (e.g. profile=kirin-9000)"
                )
            found = [d for d in available if d.matches(key, value)]
        else:
            found = [d for d in available if d.name == item]
        if not found:
            raise UserError(f"no device in the cluster matches {item!r}; {listing(available)}")
        for device in found:
            chosen.setdefault(device.name, device)
    return list(chosen.values())


def refuse_shared_devices(chosen: Sequence[DeviceInfo], available: Sequence[DeviceInfo]) -> None:
    """One line, before any actor is placed, when a chosen device could be opened twice: its
    name offered by two live nodes (a lab host's node that outlived its agent, beside the node
    of the agent that replaced it), or two chosen names for one device of one host."""
    for device in chosen:
        offers = [d for d in available if d.name == device.name]
        if len(offers) > 1:
            hosts = ", ".join(d.host or "?" for d in offers)
            raise UserError(
                f"device {device.name} is offered by {len(offers)} live Ray nodes (hosts "
                f"{hosts}), so two runs could measure it at once; stop the extra node on its lab "
                "host (a `ray start` left by an agent that was killed) and run again"
            )
    first: dict[tuple[str, str], str] = {}
    for device in chosen:
        if not device.identity:
            continue
        name = first.setdefault((device.host, device.identity), device.name)
        if name != device.name:
            raise UserError(
                f"devices {name} and {device.name} are the same device on lab host {device.host} "
                f"({device.identity}); a run measures a device under one name: keep one of them "
                "in --devices"
            )


def listing(available: Sequence[DeviceInfo]) -> str:
    if not available:
        return "no lab host has advertised a device (start `edgebench agent` on each lab host)"
    return "the cluster has: " + "; ".join(d.describe() for d in available)
