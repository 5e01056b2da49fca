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

from fakes.dummy_framework import dummy_framework_cell

from edgebench.measure.scheduler import run_cell
from edgebench.planning.config import TimingConfig

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
    timing = TimingConfig(warmup=3, iterations=25, min_time_s=0.0)
    cell, device = dummy_framework_cell(tmp_path, monkeypatch, "queued", QUEUED_BACKEND, timing)

    record = run_cell("backend-recipe", cell, device)

    assert record.status == "ok", record.error
    window = json.loads((tmp_path / "double.onnx.window.json").read_text())
    assert window["drained"] is True
    assert window["opened"] >= 3  # the warm-up ran before the window opened
    assert window["closed"] - window["opened"] == len(record.samples_ns) >= 25
    assert record.output_check.passed
