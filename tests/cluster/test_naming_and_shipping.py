"""How lab hosts advertise devices, how --devices chooses among them, and how a cell's files
travel by content hash. No Ray here: these parts do not import it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from edgebench.cluster.naming import (
    DeviceInfo,
    advertisement,
    choose_devices,
    devices_of_node,
    label_value,
)
from edgebench.cluster.shipping import Inbox, Outbox, paths_in, relocate
from edgebench.errors import UserError
from edgebench.measure.input_files import InputFiles

PHONES = [
    DeviceInfo("kirin-01", "lab1", "kirin-9000", "Kirin 9000", "arm64-v8a", "adb"),
    DeviceInfo("kirin-02", "lab2", "kirin-9000", "Kirin 9000", "aarch64", "adb"),
    DeviceInfo("sd-01", "lab1", "snapdragon-8gen2", "SM8550", "aarch64", "adb"),
    DeviceInfo("orin", "lab2", "jetson-orin", "", "aarch64", "ssh"),
]


def test_an_advertisement_reads_back_as_the_devices_it_names():
    resources, labels = advertisement("lab 1", PHONES[:3], "0.9.0+local")
    assert resources == {f"edgebench-device:{d.name}": 1.0 for d in PHONES[:3]}
    assert labels["edgebench-host"] == "lab-1"
    back = devices_of_node(resources, labels)
    assert [d.name for d in back] == ["kirin-01", "kirin-02", "sd-01"]
    assert back[0].soc == "Kirin-9000" and back[0].host == "lab-1"
    # Ray's label syntax holds for every key and value.
    from ray._private.label_utils import validate_node_label_syntax

    validate_node_label_syntax(labels)


def test_a_resource_without_labels_is_still_a_device():
    back = devices_of_node({"edgebench-device:box": 1.0, "CPU": 4.0}, {"edgebench-host": "h"})
    assert back == [DeviceInfo("box", "h")]


def test_devices_are_chosen_by_name_or_by_any_fact():
    assert [d.name for d in choose_devices(["profile=kirin-9000"], PHONES)] == [
        "kirin-01",
        "kirin-02",
    ]
    # Android's ABI name and uname's name for the same instruction set match each other.
    assert len(choose_devices(["abi=aarch64"], PHONES)) == 4
    assert [d.name for d in choose_devices(["host=lab2", "sd-01"], PHONES)] == [
        "kirin-02",
        "orin",
        "sd-01",
    ]
    assert [d.name for d in choose_devices(["soc=Kirin 9000"], PHONES)] == ["kirin-01", "kirin-02"]
    assert len(choose_devices(["orin", "host=lab2"], PHONES)) == 2  # each device once


@pytest.mark.parametrize(
    ("wanted", "message"),
    [
        (["colour=red"], "unknown key 'colour'"),
        (["profile=exynos"], "the cluster has: kirin-01 on lab1"),
        (["pixel"], "no device in the cluster matches 'pixel'"),
    ],
)
def test_a_selector_that_finds_nothing_says_so_in_one_line(wanted, message):
    with pytest.raises(UserError) as caught:
        choose_devices(wanted, PHONES)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(UserError, match="start `edgebench agent`"):
        choose_devices(["x"], [])


def test_label_values_keep_only_what_ray_accepts():
    assert label_value("Snapdragon 8 Gen 2 (SM8550)") == "Snapdragon-8-Gen-2-SM8550"
    assert label_value("") == "" and len(label_value("x" * 100)) == 63


@dataclass(frozen=True)
class Holder:
    model: Path
    folder: Path
    others: list[Path] = field(default_factory=list)
    inputs: InputFiles | None = None


def test_files_travel_once_by_content_and_keep_their_neighbours(tmp_path: Path):
    sender = tmp_path / "sender"
    (sender / "artifact").mkdir(parents=True)
    (sender / "artifact" / "model.param").write_text("param")
    (sender / "artifact" / "model.bin").write_bytes(b"\x00weights")
    (sender / "model.onnx").write_bytes(b"onnx")
    (sender / "copy.onnx").write_bytes(b"onnx")  # the same content under another name
    (sender / "image.png").write_bytes(b"png")
    holder = Holder(
        sender / "model.onnx",
        sender / "artifact",
        [sender / "copy.onnx", Path("/data/local/tmp/not-a-host-file")],
        InputFiles(sender / "image.png", "imagenet"),
    )
    roots = paths_in(holder)
    assert sender / "image.png" in roots  # found inside InputFiles, which is not a dataclass

    puts: list[bytes] = []

    def put(data: bytes) -> bytes:
        puts.append(data)
        return data

    outbox = Outbox(put)
    entries = outbox.manifest(roots)
    assert len(entries) == 5
    refs = outbox.refs(entries)
    assert sorted(puts) == sorted([b"param", b"\x00weights", b"onnx", b"png"])
    outbox.refs(entries)
    assert len(puts) == 4  # each content is put once, whatever asks again

    inbox = Inbox(tmp_path / "receiver", "submitter")
    gets: list[bytes] = []

    def get(ref: bytes) -> bytes:
        gets.append(ref)
        return ref

    assert inbox.receive(entries, refs, get) == 4
    assert inbox.receive(entries, refs, get) == 0  # nothing is fetched twice
    shipped = {os.path.abspath(p) for p in roots if p.exists()}
    moved = relocate(holder, lambda p: inbox.mirrored(p) if str(p) in shipped else p)
    assert moved.model.read_bytes() == b"onnx"
    assert (moved.folder / "model.bin").read_bytes() == b"\x00weights"
    assert moved.model.parent == moved.folder.parent  # neighbours stay neighbours
    assert moved.others[1] == Path("/data/local/tmp/not-a-host-file")  # not shipped, not moved
    assert moved.inputs.source.read_bytes() == b"png" and moved.inputs.preprocess == "imagenet"
    assert inbox.original(str(moved.model)) == str(sender / "model.onnx")


def test_a_corrupted_transfer_is_refused(tmp_path: Path):
    (tmp_path / "m.onnx").write_bytes(b"model")
    outbox = Outbox(lambda data: data)
    entries = outbox.manifest({tmp_path / "m.onnx"})
    refs = outbox.refs(entries)
    inbox = Inbox(tmp_path / "receiver", "s")
    with pytest.raises(OSError, match="does not match its hash"):
        inbox.receive(entries, refs, lambda ref: ref + b"!")
    assert not inbox.mirrored(tmp_path / "m.onnx").exists()
