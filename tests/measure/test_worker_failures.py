"""A device's worker never lets an exception end the run: every cell gets a record."""

from types import SimpleNamespace

from edgebench.lab.device_snapshot import DeviceSnapshot
from edgebench.measure.records import new_record
from edgebench.measure.scheduler import execute_cells
from edgebench.planning.cells import Cell
from edgebench.planning.config import TimingConfig
from edgebench.results.store import ResultsStore
from edgebench.statuses import Status


class FakeDevice:
    """Enough of a Device for the scheduler: a name, a lock to renew, a transport to close."""

    def __init__(self, name: str, renew_error: Exception | None = None) -> None:
        self.name = name
        self.device_lock = None
        self.transport = SimpleNamespace(close=lambda: None, kind="local")
        self.renewals = 0
        self.renew_error = renew_error

    def renew_lock(self, force: bool = False) -> None:
        self.renewals += 1
        if self.renew_error is not None and self.renewals > 1:
            raise self.renew_error  # after the first cell, outside any visit


class FakeMethod:
    """Measures the first cell; from the second on, raises ``error`` when given one."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.visits = 0

    def visit(self, cell, device, visit):
        self.visits += 1
        if self.error is not None and self.visits > 1:
            raise self.error
        return new_record(visit.run_id, cell, Status.OK, samples_ns=[1_000_000] * 10)


class Progress:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def cell_started(self, index, total, cell) -> None:
        pass

    def cell_finished(self, index, total, cell, record) -> None:
        self.lines.append(f"{cell.cell_id} {record.status}")

    def message(self, text: str) -> None:
        self.lines.append(text)


def cells_of(device: FakeDevice) -> list[Cell]:
    timing = TimingConfig(timeout_s=60.0)
    return [
        Cell(
            device=DeviceSnapshot(device.name, "not probed in this test"),
            model=SimpleNamespace(name=model, path=None, sha256=None),
            framework="onnxruntime",
            precision="fp32",
            threads=1,
            cores_selection="all",
            cores=None,
            concurrency=1,
            inputs=[],
            timing=timing,
        )
        for model in ("a", "b", "c")
    ]


def test_unexpected_errors_fail_only_their_devices_cells(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_RETRY_BACKOFF", "0")  # one retry, no wait
    phone, local = FakeDevice("phone"), FakeDevice("local")
    board = FakeDevice("board", RuntimeError("boom"))  # a host-side bug between its cells
    methods = {
        # The phone's link dies with an EOFError nobody translated.
        "phone": FakeMethod(EOFError()),
        "board": FakeMethod(),
        "local": FakeMethod(),
    }
    cells = cells_of(phone) + cells_of(board) + cells_of(local)
    run = ResultsStore(tmp_path / "runs").create_run({})
    shown = []
    records = execute_cells(
        cells, [phone, board, local], run, Progress(), methods=methods, on_record=shown.append
    )
    assert len(records) == len(run.records()) == len(shown) == len(cells)  # every cell
    by_device = {d: [r for r in records if r.device == d] for d in ("phone", "board", "local")}
    assert [r.status for r in by_device["local"]] == ["ok", "ok", "ok"]
    phone_records, board_records = by_device["phone"], by_device["board"]
    assert [r.status for r in phone_records] == ["ok", "failed", "failed"]
    assert {r.error_kind for r in phone_records[1:]} == {"transport"}
    assert "the stream ended early" in phone_records[1].error
    assert phone_records[2].error.startswith("device phone lost:")
    assert [r.status for r in board_records] == ["ok", "failed", "failed"]
    assert {r.error_kind for r in board_records[1:]} == {"internal"}
    assert all("RuntimeError: boom" in r.error for r in board_records[1:])
