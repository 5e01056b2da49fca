"""Cells measured on an emulated CPU: never ranked, never recommended, never compared."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

from fakes.records import sampled_record

from edgebench.analysis.compare import any_regression, compare_runs
from edgebench.analysis.history import history
from edgebench.analysis.metrics import get_metric
from edgebench.analysis.ranking import emulated_devices, rank, rankable
from edgebench.analysis.recommend import recommend
from edgebench.reporting.charts import history_svg
from edgebench.reporting.junit import junit_xml
from edgebench.reporting.text import format_comparison, format_history, format_recommendation
from edgebench.results.accelerator_part import AcceleratorRun
from edgebench.results.records import Record
from edgebench.results.store import ResultsStore

P50 = get_metric("p50")
QEMU = "qemu-aarch64 user mode: boot_id equals the host's"


def cell(
    device: str,
    framework: str,
    median_ms: float,
    *,
    seed: int,
    emulated: bool = False,
    status: str = "ok",
    run_id: str = "r",
) -> Record:
    """A cell with 300 seeded lognormal samples (CV 2%) around ``median_ms``."""
    return sampled_record(
        device,
        framework,
        median_ms,
        seed,
        run_id=run_id,
        status=status,
        emulated=emulated,
        emulation=QEMU if emulated else None,
    )


# --------------------------------------------------------------------------- ranking


def test_an_emulated_cell_is_left_out_of_its_devices_ranking() -> None:
    real = {
        "onnxruntime": cell("d", "onnxruntime", 100, seed=1),
        "mnn": cell("d", "mnn", 130, seed=2),
    }
    fastest = cell("d", "openvino", 50, seed=3)
    # Control: measured on the chip, the 50 ms cell is the clear best.
    assert rank({**real, "openvino": fastest}, P50).best == "openvino"

    fastest = replace(fastest, emulated=True)
    ranking = rank({**real, "openvino": fastest}, P50)
    assert ranking.best == "onnxruntime"
    assert "openvino" not in ranking.order and ranking.standing("openvino") == ""
    assert not rankable(fastest) and rankable(real["mnn"])


def test_a_device_with_only_emulated_cells_has_no_best_and_no_tie() -> None:
    cells = {
        "onnxruntime": cell("q", "onnxruntime", 100, seed=1, emulated=True),
        "mnn": cell("q", "mnn", 300, seed=2, emulated=True),
    }
    ranking = rank(cells, P50)
    assert ranking.order == () and ranking.best is None and not ranking.tied
    assert emulated_devices(cells.values()) == {"q": QEMU}


# --------------------------------------------------------------------------- recommend


def two_devices() -> list[Record]:
    """On the real board ``ort`` wins; on the emulated one ``tfl`` is far faster."""
    return [
        cell("board", "ort", 10, seed=1),
        cell("board", "tfl", 20, seed=2),
        cell("qemu", "ort", 900, seed=3, emulated=True),
        cell("qemu", "tfl", 100, seed=4, emulated=True),
    ]


def test_recommend_refuses_the_emulated_device_and_ranks_on_the_others() -> None:
    rec = recommend(two_devices(), ["board", "qemu"], "net")
    # Counted, qemu's 900 ms would make tfl's worst case (100 ms) the better one.
    assert rec.best == "ort"
    assert rec.devices == ["board"] and rec.refused == {"qemu": QEMU}
    assert all(set(s.per_device) == {"board"} for s in rec.table)
    assert rec.reasoning[0].startswith("refusing qemu: its CPU is emulated (qemu-aarch64")
    assert "correctness only" in rec.reasoning[0]
    text = format_recommendation(rec)
    assert "recommendation: ort" in text and "qemu (emulated)" in text
    assert "ok, not ranked" in text


def test_recommend_with_only_emulated_devices_refuses_with_the_reason() -> None:
    records = [r for r in two_devices() if r.emulated]
    rec = recommend(records, ["qemu"], "net")
    assert rec.best is None and rec.table == [] and rec.devices == []
    assert rec.refused == {"qemu": QEMU}
    assert any(
        line.startswith("refusing qemu: its CPU is emulated") and "correctness only" in line
        for line in rec.reasoning
    )
    text = format_recommendation(rec)
    assert text.splitlines()[0] == (
        "recommendation: none, refused: every listed device has an emulated CPU"
    )
    assert "refusing qemu" in text


def test_emulated_cells_on_a_device_that_also_has_real_ones_are_no_candidates() -> None:
    records = [
        cell("board", "ort", 10, seed=1),
        cell("board", "tfl", 20, seed=2),
        cell("board", "fast", 1, seed=3, emulated=True),
    ]
    rec = recommend(records, ["board"], "net")
    assert rec.best == "ort" and rec.refused == {}
    fast = next(s for s in rec.table if s.framework == "fast")
    assert not fast.complete and "emulated CPU" in fast.missing["board"]


def test_a_framework_not_ok_on_the_emulated_device_is_named() -> None:
    records = [*two_devices()[:3], cell("qemu", "tfl", 100, seed=4, emulated=True, status="failed")]
    rec = recommend(records, ["board", "qemu"], "net")
    tfl = next(s for s in rec.table if s.framework == "tfl")
    assert tfl.emulated == {"qemu": "1 failed"}
    assert any(
        "not ok on an emulated device" in line and "tfl on qemu" in line for line in rec.reasoning
    )


# --------------------------------------------------------------------------- compare


def test_an_emulated_side_is_not_comparable_and_never_a_regression() -> None:
    base = [cell("qemu", "ort", 100, seed=1, run_id="a")]
    slow = [cell("qemu", "ort", 300, seed=2, run_id="b")]
    # Control: on a real chip, three times slower is a regression.
    assert compare_runs(base, slow)[0].verdict == "regressed"

    for b_emu, n_emu, sides in (
        (True, False, "base"),
        (False, True, "new"),
        (True, True, "base and new"),
    ):
        base_side = [replace(base[0], emulated=b_emu)]
        new_side = [replace(slow[0], emulated=n_emu)]
        (verdict,) = compare_runs(base_side, new_side)
        assert verdict.verdict == "not_comparable"
        assert verdict.reason.startswith(f"emulated CPU ({sides})")
        assert verdict.ratio is None and verdict.p_value is None
        assert not any_regression([verdict])
    (verdict,) = compare_runs(base_side, new_side, metric="throughput")  # both emulated
    assert verdict.verdict == "not_comparable" and "emulated CPU" in verdict.reason
    assert "1 not_comparable" in format_comparison([verdict])
    suite = ET.fromstring(junit_xml([verdict], "s"))
    assert suite.get("failures") == "0" and suite.get("skipped") == "1"


def software_gpu(run_id: str, median_ms: float, seed: int, *, legacy: bool = False) -> Record:
    """ncnn on lavapipe (a software Vulkan device) on a real CPU; ``legacy``: as records
    written before the two kinds were kept apart stored it (``emulated`` set too)."""
    record = sampled_record(
        "pc",
        "ncnn",
        median_ms,
        seed,
        run_id=run_id,
        backend="vulkan",
        accelerator=AcceleratorRun("Vulkan", device="llvmpipe", software=True),
    )
    if legacy:
        return replace(record, emulated=True, emulation="software Vulkan device: llvmpipe")
    return record


def test_a_software_gpu_is_never_called_an_emulated_cpu() -> None:
    for legacy in (False, True):
        base, new = (
            [software_gpu("a", 2, 1, legacy=legacy)],
            [software_gpu("b", 6, 2, legacy=legacy)],
        )
        (verdict,) = compare_runs(base, new)
        assert verdict.verdict == "not_comparable"
        assert verdict.reason == ("software device (base and new): latency is for correctness only")
        cpu = [cell("pc", "ncnn", 10, seed=4), cell("pc", "mnn", 12, seed=5)]
        rec = recommend([*cpu, *new], ["pc"], "net")
        text = format_recommendation(rec)
        assert rec.best == "ncnn" and rec.refused == {}
        assert (
            "ncnn·vulkan: ranked last: pc: its only ok cells ran on a software device "
            "(latencies are for correctness only, never ranked)"
        ) in text
        assert "emulated" not in text
        assert emulated_devices(new) == {}


def test_compare_names_each_side_by_its_own_kind() -> None:
    qemu = cell("pc", "ncnn", 100, seed=3, emulated=True, run_id="a")
    qemu = replace(qemu, cell_id=software_gpu("b", 6, 2).cell_id)
    (verdict,) = compare_runs([qemu], [software_gpu("b", 6, 2)])
    assert verdict.reason.startswith("emulated CPU (base), software device (new): ")


def test_a_status_change_on_an_emulated_cell_is_still_reported() -> None:
    base = [cell("qemu", "ort", 100, seed=1, emulated=True)]
    new = [cell("qemu", "ort", 100, seed=1, emulated=True, status="mismatch")]
    (verdict,) = compare_runs(base, new)
    assert verdict.verdict == "not_comparable" and "status base=ok new=mismatch" in verdict.reason


# --------------------------------------------------------------------------- history


def test_history_flags_emulated_points_and_gives_no_change_across_kinds(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "results")
    for median, emulated in ((10, False), (500, True), (11, False)):
        run = store.create_run({})
        run.append(cell("d", "ort", median, seed=median, emulated=emulated, run_id=run.run_id))
    points = history(store, "d", "net", "ort")
    assert [p.correctness_only for p in points] == ["", "emulated CPU", ""]
    rows = format_history(points).splitlines()
    assert "ok (emulated CPU)" in rows[3] and rows[3].split()[3] == "-"
    change = rows[4].split()[3]
    assert change.startswith("+") and abs(float(change.rstrip("%"))) < 20  # vs 10 ms, not 500
    assert "correctness only" in rows[-1]
    svg = history_svg(points)
    assert svg.count('fill="#fff" stroke=') == 1 and "emulated CPU: correctness only" in svg


def test_history_and_the_gate_say_software_device_for_a_software_gpus_night(tmp_path) -> None:
    store = ResultsStore(tmp_path / "results")
    for median, legacy in ((500, False), (600, True)):
        run = store.create_run({})
        record = software_gpu(run.run_id, median, seed=median, legacy=legacy)
        run.append(record)
    points = history(store, "pc", record.model, record.engine)
    assert [p.correctness_only for p in points] == ["software device"] * 2
    text = format_history(points)
    assert "ok (software device)" in text and "emulated" not in text
    assert "(software device): measured on a software device" in text
