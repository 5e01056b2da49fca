"""The 'add a transport' recipe of docs/ARCHITECTURE.md: a module's ``KIND`` and its name in
the registry are all the lab file, the inventory and a measured cell need."""

import re
import sys
from pathlib import Path

import pytest

from edgebench.errors import UserError
from edgebench.lab.inventory import resolve_devices
from edgebench.lab.lab_file import load_lab
from edgebench.lab.transports import LocalTransport, TransportKind, transport_kinds
from edgebench.measure.methods import method_for
from edgebench.measure.scheduler import run_cell
from edgebench.planning.cells import build_cells, resolve_inputs
from edgebench.planning.config import TimingConfig
from edgebench.planning.modelref import resolve_models


class SandboxTransport(LocalTransport):
    """Commands run on this machine, under a label: a stand-in for a new kind of link."""

    kind = "sandbox"

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label

    def describe(self) -> str:
        return f"sandbox {self.label}"


def _read_endpoint(entry) -> dict:
    label = entry.pattern("label", re.compile(r"\w{1,32}"), '"bench1"', "a label")
    if label is None:
        raise entry.fail("label", 'is missing (e.g. label = "bench1")')
    return {"label": label}


SANDBOX = TransportKind(
    name="sandbox",
    keys=("label",),
    read_endpoint=_read_endpoint,
    address=lambda endpoint: f"sandbox {endpoint['label']}",
    open=lambda name, endpoint: SandboxTransport(endpoint["label"]),
)


@pytest.fixture
def sandbox_registered(monkeypatch):
    monkeypatch.setitem(transport_kinds(), "sandbox", SANDBOX)


def write_lab(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(["[devices.box]", 'transport = "sandbox"', *lines]) + "\n")
    return path


def test_a_registered_transport_measures_a_cell(sandbox_registered, tmp_path, conv_model):
    work_dir = tmp_path / "box-work"
    lab = load_lab(
        write_lab(
            tmp_path / "lab.toml",
            'label = "bench1"',
            f'python = "{sys.executable}"',
            f'work_dir = "{work_dir}"',
        )
    )
    entry = lab.devices["box"]
    assert (entry.address(), entry.label, entry.runner) == ("sandbox bench1", "bench1", "python")

    (device,) = resolve_devices(["box"], lab)
    assert device.transport.describe() == "sandbox bench1"
    method = method_for(device)
    models = resolve_models([str(conv_model)], tmp_path / "cache")
    (cell,) = build_cells(
        [device],
        models,
        ["onnxruntime"],
        inputs=resolve_inputs(models, []),
        threads=[1],
        cores=["all"],
        concurrency=1,
        precision="fp32",
        timing=TimingConfig(warmup=1, iterations=5, min_time_s=0.0),
        availability=method.availability,
    )
    record = run_cell("sandboxed", cell, device, method=method)
    assert record.status == "ok", record.error
    assert record.n_samples >= 5 and record.output_check and record.output_check.passed
    assert (work_dir / "runner" / "runner.py").is_file()  # deployed like any remote device


def test_the_lab_file_checks_a_registered_transports_keys(sandbox_registered, tmp_path):
    with pytest.raises(UserError, match=r"devices\.box\.label is missing"):
        load_lab(write_lab(tmp_path / "a.toml"))
    with pytest.raises(UserError, match=r"devices\.box\.label .* is not a label"):
        load_lab(write_lab(tmp_path / "b.toml", 'label = "no spaces"'))
    ssh_with_label = tmp_path / "c.toml"
    ssh_with_label.write_text('[devices.o]\ntransport = "ssh"\nhost = "127.0.0.1"\nlabel = "x"\n')
    with pytest.raises(UserError, match="only used by sandbox devices; this one uses ssh"):
        load_lab(ssh_with_label)


def test_unregistered_transport_is_named_with_the_known_ones(tmp_path):
    with pytest.raises(UserError, match=r'"sandbox" is not a transport \(use adb, ssh or local\)'):
        load_lab(write_lab(tmp_path / "lab.toml"))
