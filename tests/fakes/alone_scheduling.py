"""Two test processes at once, except for the tests marked ``alone``.

The suite runs under pytest-xdist (``-n auto`` in pyproject.toml, at most two workers: most
tests wait on peers, qemu or a child process, so a second worker roughly halves the wall
time on two cores). Tests whose assertions compare timings need a quiet CPU; they carry the
``alone`` marker and run at the end, on one worker, once every other worker has finished.

How the scheduler learns which tests those are: the controller does not collect, so each
worker writes the node ids of its ``alone`` tests to a file in a folder the controller hands
it, before it reports its collection. Without xdist (``-p no:xdist`` or ``-n 0``) the marker
changes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

ALONE = "alone"
_ALONE_UNIT = "<the tests marked alone>"
_FOLDER_KEY = "edgebench_alone_folder"
#: More workers than this gain little here and multiply the memory of the converter tests.
MAX_WORKERS = 2


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{ALONE}: compares timings, so runs after every other test with no other worker "
        "running (tests/fakes/alone_scheduling.py)",
    )


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Controller side: every worker gets the folder its list of ``alone`` tests goes to."""
    config = node.config
    folder = getattr(config, "_edgebench_alone_folder", None)
    if folder is None:
        folder = Path(tempfile.mkdtemp(prefix="edgebench-alone-"))
        config._edgebench_alone_folder = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    node.workerinput[_FOLDER_KEY] = str(folder)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Worker side: the ids of this worker's ``alone`` tests, written whole (renamed into
    place) before the worker reports its collection."""
    workerinput = getattr(config, "workerinput", None)
    if not workerinput or _FOLDER_KEY not in workerinput:
        return
    alone = [item.nodeid for item in items if item.get_closest_marker(ALONE)]
    folder = Path(workerinput[_FOLDER_KEY])
    written = folder / f"{workerinput['workerid']}.json.part"
    written.write_text(json.dumps(alone))
    written.replace(written.with_suffix(""))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist") != "load":
        return None
    folder = getattr(config, "_edgebench_alone_folder", None)
    return _alone_last_scheduling(config, log, folder)


def _alone_ids(folder: Path | None) -> set[str]:
    if folder is None:
        return set()
    ids: set[str] = set()
    for written in folder.glob("*.json"):
        ids.update(json.loads(written.read_text()))
    return ids


def _alone_last_scheduling(config: pytest.Config, log: Any, folder: Path | None) -> Any:
    from xdist.scheduler import LoadFileScheduling

    class AloneLastScheduling(LoadFileScheduling):  # type: ignore[misc]  # xdist has no stubs
        """xdist's ``loadfile`` scheduling (a file's tests go to one worker, so its module
        fixtures are built once), with every ``alone`` test in one last unit of work. Once
        only that unit is left, the first worker to ask for more runs it and the others
        finish what they hold and stop; it is sent when they have.

        A worker runs a test only once it knows the next one (or is told to stop), so the
        chosen worker's last test before the unit waits for the others too.
        """

        def __init__(self) -> None:
            super().__init__(config, log)
            self.alone: set[str] | None = None
            self.runner: Any = None

        def _split_scope(self, nodeid: str) -> str:
            if self.alone is None:  # first called once every worker has written its list
                self.alone = _alone_ids(folder)
            return _ALONE_UNIT if nodeid in self.alone else super()._split_scope(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            if _ALONE_UNIT not in self.workqueue:
                super()._assign_work_unit(node)
            elif len(self.workqueue) > 1:
                self.workqueue.move_to_end(_ALONE_UNIT)
                super()._assign_work_unit(node)
            else:
                if self.runner is None:
                    self.runner = node
                    for other in self.nodes:
                        if other is not node and not other.shutting_down:
                            other.shutdown()
                self._release_alone()

        def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
            super().mark_test_complete(node, item_index, duration)
            self._release_alone()

        def remove_node(self, node: Any) -> str | None:
            if node is self.runner:
                self.runner = None
            crashed = super().remove_node(node)
            if self.runner is None and list(self.workqueue) == [_ALONE_UNIT]:
                self.runner = next((n for n in self.nodes if not n.shutting_down), None)
            self._release_alone()
            return crashed

        def _release_alone(self) -> None:
            runner = self.runner
            if runner is None or runner.shutting_down or list(self.workqueue) != [_ALONE_UNIT]:
                return
            if any(self._pending_of(self.assigned_work[n]) for n in self.nodes if n is not runner):
                return
            super()._assign_work_unit(runner)
            runner.shutdown()

    return AloneLastScheduling()
