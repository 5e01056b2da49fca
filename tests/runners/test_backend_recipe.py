"""The "add a backend" recipe of docs/ARCHITECTURE.md, followed once: a framework backend whose
work is queued, as on an accelerator, drains the queue in its own timed-region hook.

The dummy backend's stream only enqueues y = 2 * x to a worker thread (as a GPU command queue
returns before the kernel ran); its copy-out waits for that one result. Its ``window_hooks``
adds a sync that drains the queue before the window closes, and logs how many inferences had
been submitted when the window opened and when it closed, so the test can check that the hook
wrapped exactly the timed inferences the record holds.
"""

from __future__ import annotations

import json
import shutil

from fakes.models import save_double_model
from fakes.runner_process import RUNNER

from edgebench import frameworks
from edgebench.frameworks import FRAMEWORKS, Framework
from edgebench.lab.device import LocalDevice
from edgebench.measure.methods.python_runner import PythonRunner
from edgebench.measure.scheduler import run_cell
from edgebench.paths import cache_dir
from edgebench.planning.cells import build_cells, check_frameworks, resolve_inputs
from edgebench.planning.config import TimingConfig
from edgebench.planning.modelref import resolve_model

QUEUED_BACKEND = '''
"""A numpy-only "accelerator" for the backend recipe test: y = 2 * x, computed on a queue."""

import contextlib
import json
import queue
import threading

from .base import Backend, InputSpec, Stream, check_precision

FRAMEWORK = "queued"
REQUIRES = ("numpy",)


class QueuedBackend(Backend):
    name = FRAMEWORK

    def version(self):
        return "0.1"

    def load(self, model_path, threads, precision, options):
        check_precision(self, precision)
        self.log_path = model_path + ".window.json"
        self.submitted = 0
        self.jobs = queue.Queue()
        self.worker = threading.Thread(target=self._work, daemon=True)
        self.worker.start()

    def _work(self):
        while True:
            job = self.jobs.get()
            if job is None:
                return
            job()

    def model_inputs(self):
        return [InputSpec("x", [1, 16], "float32")]

    def output_names(self):
        return ["y"]

    def make_stream(self, feeds):
        x = feeds["x"]
        box = {}
        done = threading.Event()

        def copy_in():
            done.clear()

        def compute():
            self.submitted += 1
            self.jobs.put(lambda: (box.update(y=x * 2), done.set()))

        def copy_out():
            done.wait(10)
            return [box["y"]]

        return Stream(copy_in, compute, copy_out, {"compute": "enqueued on the worker"})

    @contextlib.contextmanager
    def _synced_window(self):
        opened = self.submitted
        yield
        drained = threading.Event()
        self.jobs.put(drained.set)
        drained.wait(10)
        with open(self.log_path, "w") as log:
            closed = self.submitted
            json.dump({"opened": opened, "closed": closed, "drained": drained.is_set()}, log)

    def window_hooks(self):
        return [self._synced_window()]

    def close(self):
        self.jobs.put(None)


BACKEND = QueuedBackend
'''


def test_a_backend_adds_its_sync_as_a_timed_region_hook(tmp_path, monkeypatch):
    runners = tmp_path / "runners"
    shutil.copytree(RUNNER.parent, runners, ignore=shutil.ignore_patterns("__pycache__"))
    (runners / "backends" / "queued_backend.py").write_text(QUEUED_BACKEND)
    monkeypatch.setattr(
        frameworks, "FRAMEWORKS", (*FRAMEWORKS, Framework("queued", backend="queued_backend"))
    )
    device = LocalDevice()
    device.runner_path = str(runners / "runner.py")
    model_file = save_double_model(tmp_path / "double.onnx")
    model = resolve_model(str(model_file), cache_dir())
    (cell,) = build_cells(
        [device],
        [model],
        check_frameworks(["queued"]),
        inputs=resolve_inputs([model], []),
        threads=[1],
        cores=["all"],
        concurrency=1,
        precision="fp32",
        timing=TimingConfig(warmup=3, iterations=25, min_time_s=0.0),
        availability=PythonRunner().availability,
    )

    record = run_cell("backend-recipe", cell)

    assert record.status == "ok", record.error
    window = json.loads((tmp_path / "double.onnx.window.json").read_text())
    assert window["drained"] is True
    assert window["opened"] >= 3  # the warm-up ran before the window opened
    assert window["closed"] - window["opened"] == len(record.samples_ns) >= 25
    assert record.output_check.passed
