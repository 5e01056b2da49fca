"""Device watches (runners/device_watch.py): the generic cell names no vendor, a backend's
watch runs around exactly the timed window and its report reaches the record, and the NVIDIA
watch the runner's registry names still reports for a CPU cell on an NVIDIA device."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from fakes.dummy_framework import dummy_framework_cell
from fakes.jetson_board import jetson_tools, jetson_tree, path_with
from fakes.local_cells import onnxruntime_cells
from fakes.models import save_double_model
from test_backend_recipe import QUEUED_BACKEND

from edgebench.lab.device import LocalDevice
from edgebench.measure.scheduler import run_cell
from edgebench.planning.config import TimingConfig
from edgebench.runners import device_watch, nvidia_info
from edgebench.runners.device_watch import DeviceWatch, checked_watch, reports
from edgebench.runners.nvidia_cell import NvidiaDeviceWatch

RUNNERS = Path(__file__).resolve().parents[2] / "runners"
VENDOR = re.compile(r"nvidia|jetson|tegra|nvml|cuda", re.IGNORECASE)
NVML_HERE = nvidia_info.open_first(nvidia_info.NVML_NAMES)[0] is not None


def imported_modules(path: Path) -> list[str]:
    """Every module ``path`` imports, relative ones with their dots."""
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            names += [base] if node.module else [base + alias.name for alias in node.names]
    return names


@pytest.mark.parametrize("module", ["cell.py", "runner.py"])
def test_the_generic_runner_imports_and_names_no_vendor(module):
    path = RUNNERS / module
    assert [name for name in imported_modules(path) if VENDOR.search(name)] == []
    code = ast.unparse(ast.parse(path.read_text()))  # docstrings kept, comments dropped
    assert VENDOR.findall(code) == []


#: The backend recipe's queued "accelerator", with a device watch of its own that reads the
#: queue's counter when the window opens and when it closes, as a GPU watch samples.
WATCHED_BACKEND = (
    QUEUED_BACKEND.replace('FRAMEWORK = "queued"', 'FRAMEWORK = "watched"')
    + """
from ..device_watch import DeviceWatch

LOADED = []


class WatchedBackend(QueuedBackend):
    def load(self, *args):
        super().load(*args)
        LOADED.append(self)


class QueueWatch(DeviceWatch):
    key = "nvidia"

    @classmethod
    def for_cell(cls, compute_backend, root):
        return cls()

    def __init__(self):
        self.marks = []

    @contextlib.contextmanager
    def _window(self):
        self.marks.append(LOADED[0].submitted)
        yield
        self.marks.append(LOADED[0].submitted)

    def window_hooks(self):
        return [self._window()]

    def report(self):
        opened, closed = self.marks
        why = {"gpu": "a queue, opened at inference %d" % opened}
        return {"source": "queue", "samples": closed - opened, "unavailable": why}


BACKEND = WatchedBackend
WATCHES = (QueueWatch,)
"""
)


def test_a_backend_contributes_a_watch_around_exactly_the_timed_window(tmp_path, monkeypatch):
    timing = TimingConfig(warmup=3, iterations=25, min_time_s=0.0)
    cell, device = dummy_framework_cell(tmp_path, monkeypatch, "watched", WATCHED_BACKEND, timing)

    record = run_cell("device-watch", cell, device)

    assert record.status == "ok", record.error
    assert record.nvidia is not None and record.nvidia.source == "queue"
    # The first inference and the 3 warm-ups ran before the window opened; nothing after it.
    assert record.nvidia.unavailable == {"gpu": "a queue, opened at inference 4"}
    assert record.nvidia.samples == len(record.samples_ns) >= 25
    assert record.output_check.passed


@pytest.mark.skipif(NVML_HERE, reason="this machine has NVML (an NVIDIA driver)")
def test_the_device_nvidia_watch_reports_a_cpu_cell_on_a_jetson(tmp_path, monkeypatch):
    root = jetson_tree(tmp_path / "root")
    monkeypatch.setenv("EDGEBENCH_SYSFS_ROOT", str(root))
    monkeypatch.setenv("PATH", path_with(jetson_tools(tmp_path / "bin", mode="7W", mode_id=3)))
    device = LocalDevice()
    (cell,) = onnxruntime_cells(save_double_model(tmp_path / "double.onnx"), device)

    record = run_cell("device-watch", cell, device)

    assert record.status == "ok", record.error
    assert NvidiaDeviceWatch in device_watch.device_watches()
    assert record.nvidia is not None and record.nvidia.source == "jetson"
    assert (record.nvidia.power_mode, record.nvidia.samples) == ("7W", 0)


class Reporting(DeviceWatch):
    key = "nvidia"

    def __init__(self, part):
        self.part = part
        self.reported = False

    def report(self):
        self.reported = True
        return self.part


def test_a_key_is_filled_by_the_first_watch_that_reports_and_every_watch_reports():
    watches = [Reporting(None), Reporting({"source": "first"}), Reporting({"source": "late"})]
    assert reports(watches) == {"nvidia": {"source": "first"}}
    assert all(watch.reported for watch in watches)
    assert reports([Reporting(None)]) == {}


def test_a_watch_must_fill_a_key_of_the_result():
    class Stray(DeviceWatch):
        key = "gpu_facts"

    with pytest.raises(TypeError, match=r"^toy\.WATCHES: Stray fills 'gpu_facts', which is not"):
        checked_watch(Stray, "toy.WATCHES")
    with pytest.raises(TypeError, match=r"^toy\.WATCHES: 'nvidia' is not a DeviceWatch"):
        checked_watch("nvidia", "toy.WATCHES")
    assert checked_watch(NvidiaDeviceWatch, "nvidia_cell.WATCH") is NvidiaDeviceWatch
