"""The matrix and the reports show an emulated cell's figure, marked, and never rank it."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pandas as pd
from fakes.records import sampled_record

from edgebench.reporting.export import records_frame
from edgebench.reporting.html import render_html
from edgebench.reporting.matrix import format_details, format_matrix
from edgebench.reporting.report import render_markdown, write_report
from edgebench.results.records import Record
from edgebench.results.store import ResultsStore

QEMU = "qemu-aarch64 user mode on x86_64"


def cell(device: str, framework: str, median_ms: float, seed: int, **fields) -> Record:
    return sampled_record(
        device,
        framework,
        median_ms,
        seed,
        throughput_ips=1000 / median_ms,
        peak_rss_mb=50.0 + median_ms,
        **fields,
    )


def emulated(device: str, framework: str, median_ms: float, seed: int, how: str = QEMU) -> Record:
    return cell(device, framework, median_ms, seed, emulated=True, emulation=how)


def board_and_qemu(*, flag: bool = True) -> list[Record]:
    """``board``: the emulated openvino cell is the fastest by far; ``qemu``: all emulated."""
    make = emulated if flag else cell
    return [
        cell("board", "onnxruntime", 100, 1),
        cell("board", "mnn", 130, 2),
        make("board", "openvino", 40, 3),
        make("qemu", "onnxruntime", 900, 4),
        make("qemu", "mnn", 600, 5),
        make("qemu", "openvino", 1200, 6),
    ]


def text_rows(text: str) -> dict[str, list[str]]:
    """device -> its cells of the first table (cells are two or more spaces apart)."""
    lines = text.splitlines()
    return {
        (cells := re.split(r"\s{2,}", line.strip()))[0]: cells[1:]
        for line in lines[3:]
        if line.strip() and not line.startswith("emulated:")
    }


# --------------------------------------------------------------------------- text matrix


def test_text_matrix_marks_emulated_cells_and_stars_the_best_real_one() -> None:
    # Control: were it measured on the chip, board's 40 ms openvino would be the best.
    control = text_rows(format_matrix(board_and_qemu(flag=False)))
    assert control["board"][2].endswith("*")

    text = format_matrix(board_and_qemu())
    rows = text_rows(text)
    onnxruntime, mnn, openvino = rows["board"]
    assert onnxruntime.endswith("*") and not mnn.endswith(("*", "≈"))
    assert re.fullmatch(r"\d+(\.\d+)? \(emulated\)", openvino), openvino
    assert all(c.endswith(" (emulated)") for c in rows["qemu"])
    assert "*" not in "".join(rows["qemu"]) and "≈" not in "".join(rows["qemu"])
    assert "(emulated) = on an emulated CPU" in text.splitlines()[0]
    notes = [line for line in text.splitlines() if line.startswith("emulated:")]
    assert notes == [
        f"emulated: board runs on an emulated CPU ({QEMU}): latencies are for correctness only, "
        "never ranked",
        f"emulated: qemu runs on an emulated CPU ({QEMU}): latencies are for correctness only, "
        "never ranked",
    ]


def test_text_matrix_without_emulated_cells_says_nothing_of_emulation() -> None:
    text = format_matrix(board_and_qemu(flag=False))
    assert "emulated" not in text


def test_details_and_note_without_evidence() -> None:
    records = [emulated("qemu", "mnn", 600, 5, how=""), cell("board", "mnn", 100, 1)]
    records[0] = replace(records[0], emulation=None)
    assert (
        "emulated: qemu runs on an emulated CPU: latencies are for correctness only, never ranked"
        in format_matrix(records).splitlines()
    )
    details = format_details(records).splitlines()
    assert "ok (emulated)" in next(line for line in details if line.startswith("qemu/net/mnn"))
    assert "emulated" not in next(line for line in details if line.startswith("board/net/mnn"))


# --------------------------------------------------------------------------- Markdown


def test_markdown_marks_emulated_cells_and_never_stars_them() -> None:
    md = render_markdown(board_and_qemu(), "run-1")
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.strip().strip("|").split("|")[1:]]
        for line in md.splitlines()
        if line.startswith(("| board", "| qemu"))
    }
    assert rows["board"][0].endswith(" ★") and rows["board"][2].endswith(" (emulated)")
    assert all(c.endswith(" (emulated)") and "★" not in c for c in rows["qemu"])
    assert md.count("runs on an emulated CPU") == 2
    assert f"- emulated: board runs on an emulated CPU ({QEMU})" in md


# --------------------------------------------------------------------------- HTML


def heatmaps(page: str) -> list[str]:
    return re.findall(r'<table class="heatmap">.*?</table>', page, flags=re.S)


def test_html_hatches_exactly_the_emulated_cells_and_adds_the_legend() -> None:
    records = board_and_qemu()
    page = render_html(records)
    tables = heatmaps(page)
    # No cell measured energy: its table would be empty, so it is named instead of drawn.
    assert len(tables) == 4 and "Not measured in this run: energy per inference." in page
    p50 = tables[0]
    cells = re.findall(r"<td class=\"(cell[^\"]*)\"[^>]*>(.*?)</td>", p50)
    assert len(cells) == 6
    hatched = [text for cls, text in cells if cls == "cell emu"]
    assert len(hatched) == 4  # board/openvino and the three on qemu
    assert all('<span class="emu-label">emulated</span>' in text for text in hatched)
    assert all("emulated" not in text for cls, text in cells if cls != "cell emu")
    # Every heatmap: as many hatched cells and labels as there are emulated records.
    n_emulated = sum(r.emulated for r in records)
    for table in tables:
        assert table.count('class="cell emu"') == n_emulated
        assert table.count('<span class="emu-label">emulated</span>') == n_emulated
    # Never starred, tied or coloured: the star goes to board's onnxruntime.
    board = p50[p50.index(">board<") : p50.index(">qemu<")]
    starred = re.findall(r'title="board / (\w+):[^"]*"><a href="#cell-\d+">[\d.]+ ★</a>', board)
    assert board.count("★") == 1 and starred == ["onnxruntime"]
    emu_cells = re.findall(r'<td class="cell emu"[^>]*>.*?</td>', page)
    assert not any("★" in c or "≈" in c or "background:hsl" in c for c in emu_cells)
    assert "td.emu{" in page and "repeating-linear-gradient" in page
    # The legend and the devices table, the details badge and the hatched charts.
    assert "emu-legend" in page and page.count("runs on an emulated CPU") == 2
    assert "<th>emulated CPU</th>" in page
    assert page.count('<span class="status emu">emulated CPU</span>') == n_emulated
    assert page.count("<pattern id=") == page.count('class="emu-hatch"') == n_emulated
    assert len(set(re.findall(r'<pattern id="([^"]+)"', page))) == n_emulated


def test_the_summary_shows_emulated_cells_but_never_ranks_them() -> None:
    page = render_html(board_and_qemu())
    summary = page.split('<section class="summary">', 1)[1].split("</section>", 1)[0]
    text = re.sub(r"<[^>]+>", "", summary)
    # board: the emulated openvino (40 ms) would win; onnxruntime (100 ms) is the answer.
    assert re.search(r"★ onnxruntime (99\.\d|10\d) ms", text) and "openvino (emulated CPU)" in text
    assert "nothing ranked: every cell that ran ok ran on an emulated CPU" in text
    assert "onnxruntime, mnn, openvino (emulated CPU)" in text, "said once per reason"
    chart = re.search(r'<svg class="chart summary-chart".*?</svg>', summary, flags=re.S)
    assert chart is not None
    assert chart.group(0).count("emulated CPU, not ranked") == 4
    assert chart.group(0).count('stroke-dasharray="3,2"') == 4, "drawn, pale and dashed"
    # Each device's emulation note once on the page, pointed to from the summary and the
    # matrices alike.
    for device in ("board", "qemu"):
        note = f"{device} runs on an emulated CPU ({QEMU})"
        assert page.count(note) == 1
        number = re.search(rf'<li id="(note-\d+)"[^>]*>{re.escape(note)}', page)
        assert number is not None
        assert page.count(f'href="#{number.group(1)}"') >= 2


def test_html_without_emulated_cells_has_no_hatch() -> None:
    page = render_html(board_and_qemu(flag=False))
    assert 'class="cell emu"' not in page and "<pattern" not in page
    assert "emu-legend" not in page and "<th>emulated CPU</th>" not in page


def test_emulated_cells_do_not_stretch_the_colour_scale() -> None:
    """board's onnxruntime (100) and mnn (130) span green to red without the emulated 40."""
    page = render_html(board_and_qemu())
    p50 = heatmaps(page)[0]
    colours = {
        fw: hue
        for hue, fw in re.findall(r'background:hsl\((\d+),[^"]*" title="board / (\w+):', p50)
    }
    assert colours == {"onnxruntime": "120", "mnn": "0"}


# --------------------------------------------------------------------------- exports


def test_exports_carry_the_emulated_fields(tmp_path: Path) -> None:
    records = board_and_qemu()
    frame = records_frame(records)
    assert frame["emulated"].tolist() == [r.emulated for r in records]
    assert frame["emulation"].fillna("").tolist() == [r.emulation or "" for r in records]

    run = ResultsStore(tmp_path / "res").create_run({})
    for r in records:
        run.append(r)
    paths = write_report(run, ["csv", "json"], tmp_path / "out")
    csv = pd.read_csv(next(p for p in paths if p.suffix == ".csv"))
    assert csv["emulated"].tolist() == [False, False, True, True, True, True]
    assert csv["emulation"].fillna("").tolist() == ["", "", QEMU, QEMU, QEMU, QEMU]
    data = json.loads(next(p for p in paths if p.suffix == ".json").read_text())
    assert [d["emulated"] for d in data] == [False, False, True, True, True, True]
    assert data[2]["emulation"] == QEMU
