"""Bad input to the commands that read stored runs: show, compare, recommend, history, export
and report, through the real CLI in a subprocess.

Damaged runs (a records.jsonl or run.json that is a folder, a pipe, a link to nothing, or
missing), wrong-typed run.json fields, hostile model names, and reports that misstated what
was measured. A command on a damaged run says so in one line naming the file; `history` over
the whole store skips it with one warning and goes on.

The runs are a real tiny `edgebench run` made once per module, copied into a private store per
test before being damaged, or records written with tests/fakes/records.py.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakes.cli_checks import (
    FAST,
    CliResult,
    assert_no_traceback,
    assert_one_error_line,
    cli,
    records_of,
)
from fakes.models import save_conv_model
from fakes.records import sampled_record

from edgebench.analysis.statistics import latency_stats
from edgebench.results.records import Record
from edgebench.results.store import ResultsStore

ORT = ["--frameworks", "onnxruntime"]
GOOD, BROKEN = "20260101-000000-good", "20260102-000000-bad0"
RAPL_GAP = (
    "energy unavailable: no readable energy source (tried android_odpm, android_fuel_gauge, "
    "ina3221, rapl); rapl: /sys/class/powercap/intel-rapl:0/energy_uj is missing"
)


def energy_gap(flag: str) -> dict[str, Any]:
    """A record's energy fields when it has no figure, as measure writes them: the reason in
    the energy part, and the flag shown to users."""
    return {"energy_flags": [flag], "energy": {"unavailable": flag.split(": ", 1)[1]}}


@pytest.fixture(scope="module")
def real_run(mod_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One real run of three tiny models: two files called tiny.onnx in different folders,
    and solo.onnx."""
    folder = tmp_path_factory.mktemp("models")
    paths = [folder / "a" / "tiny.onnx", folder / "b" / "tiny.onnx", folder / "solo.onnx"]
    for i, path in enumerate(paths):
        path.parent.mkdir(exist_ok=True)
        save_conv_model(path, [1, 3, 32, 32], channels=4 + i)
    result = cli(["run", "--models", ",".join(map(str, paths)), *ORT, *FAST], mod_env)
    assert result.returncode == 0, result.stderr
    records = records_of(result)
    assert len(records) == 3 and all(r["status"] == "ok" for r in records), records
    folder = Path(mod_env["EDGEBENCH_RESULTS"]) / records[0]["run_id"]
    return {"folder": folder, "records": records, "env": mod_env}


def private_store(real_run: dict[str, Any], tmp_path: Path, *names: str) -> dict[str, str]:
    """The real run copied under each of ``names`` into a results dir of this test alone."""
    results = tmp_path / "results"
    for name in names:
        shutil.copytree(real_run["folder"], results / name)
    return dict(real_run["env"], EDGEBENCH_RESULTS=str(results))


def stored(env: dict[str, str], name: str) -> Path:
    return Path(env["EDGEBENCH_RESULTS"]) / name


def hand_made_store(tmp_path: Path, env: dict[str, str], *runs: list[Record]) -> dict[str, str]:
    """A results dir holding one run per list of records (oldest first); the env to read it."""
    store = ResultsStore(tmp_path / "made")
    for records in runs:
        run = store.create_run({"status": "complete"})
        for record in records:
            run.append(replace(record, run_id=run.run_id))
    return dict(env, EDGEBENCH_RESULTS=str(store.root))


def _make_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _make_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _make_dangling(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.with_name("gone"))


#: (file, how it is damaged, what the error says)
DAMAGES: dict[str, tuple[str, Callable[[Path], None], str]] = {
    "records-folder": ("records.jsonl", _make_folder, "is a folder, not a file"),
    "records-fifo": ("records.jsonl", _make_fifo, "is not a regular file"),
    "records-dangling-link": ("records.jsonl", _make_dangling, "is a link to nothing"),
    "records-missing": ("records.jsonl", Path.unlink, "is missing"),
    "run-json-folder": ("run.json", _make_folder, "is a folder, not a file"),
}


def damaged_store(real_run: dict[str, Any], tmp_path: Path, damage: str) -> tuple[dict, Path]:
    """A store with a good run and a damaged copy of it; the env and the damaged file."""
    env = private_store(real_run, tmp_path, GOOD, BROKEN)
    name, damage_it, _ = DAMAGES[damage]
    path = stored(env, BROKEN) / name
    damage_it(path)
    return env, path


def assert_names_the_file(result: CliResult, path: Path, damage: str) -> str:
    line = assert_one_error_line(result)
    assert str(path) in line and DAMAGES[damage][2] in line, line
    return line


def table_rows(stdout: str, first_header: str) -> list[dict[str, str]]:
    """The rows of the text table whose header line starts with ``first_header``, by column
    (columns are found from the dashes under the header)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first_header))
    header, dashes = lines[start], lines[start + 1]
    spans, col = [], 0
    for width in (len(d) for d in dashes.split("  ") if d):
        col = dashes.index("-" * width, col)
        spans.append((col, col + width))
        col += width
    names = [header[a:b].strip() for a, b in spans]
    rows = []
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        rows.append({n: line[a:b].strip() for n, (a, b) in zip(names, spans, strict=True)})
    return rows


# --------------------------------------------------------------------------------------- show


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_show_of_a_damaged_run_names_the_file(real_run, tmp_path, damage):
    env, path = damaged_store(real_run, tmp_path, damage)
    result = cli(["show", BROKEN], env)
    assert_names_the_file(result, path, damage)
    assert "0 cells" not in result.stdout


def test_show_without_run_json_shows_the_records_and_says_what_is_missing(real_run, tmp_path):
    env = private_store(real_run, tmp_path, BROKEN)
    (stored(env, BROKEN) / "run.json").unlink()
    shown = cli(["show", BROKEN, "--format", "jsonl"], env)
    assert_no_traceback(shown)
    assert shown.returncode == 0, shown.stderr
    assert len(records_of(shown)) == 3
    warnings = [line for line in shown.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1 and str(stored(env, BROKEN) / "run.json") in warnings[0], warnings
    table = cli(["show", BROKEN], env)
    assert table.returncode == 0 and f"run {BROKEN} (no run.json, 3 cells" in table.stdout


def test_show_gives_cells_that_never_measured_no_peak_mb(real_run, tmp_path):
    measured = sampled_record("local", "onnxruntime", 2.0, 1, peak_rss_mb=61.5)
    unsupported = Record(
        "r", "local/net/ncnn/fp32/t4/call/s1", "local", "net", "ncnn", "fp32", 4, "all",
        "unsupported", error="Resize is not supported", peak_rss_mb=55.5,
    )  # fmt: skip
    failed = Record(
        "r", "local/net/mnn/fp32/t4/call/s1", "local", "net", "mnn", "fp32", 4, "all",
        "failed", error="boom", error_kind="inference", peak_rss_mb=44.5,
    )  # fmt: skip
    env = hand_made_store(tmp_path, real_run["env"], [measured, unsupported, failed])
    shown = cli(["show"], env)
    assert shown.returncode == 0, shown.stderr
    peaks = {row["cell"]: row["peak MB"] for row in table_rows(shown.stdout, "cell ")}
    assert peaks == {"local/net/onnxruntime": "61.5", "local/net/ncnn": "-", "local/net/mnn": "-"}


@pytest.mark.parametrize(
    ("gap", "whole"),
    [
        pytest.param(RAPL_GAP, True, id="the-rapl-note-whole"),
        pytest.param("energy unavailable: " + "no sensor answered here " * 20, False, id="long"),
    ],
)
def test_show_energy_note_is_whole_or_cut_after_a_whole_word(real_run, tmp_path, gap, whole):
    record = sampled_record("local", "onnxruntime", 2.0, 1, **energy_gap(gap))
    shown = cli(["show"], hand_made_store(tmp_path, real_run["env"], [record]))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    note = lines[lines.index("energy:") + 1].removeprefix("  local: ")
    text = " ".join(gap.split())
    if whole:
        assert note == text
    else:
        assert note.endswith("…") and text.startswith(note[:-1]), note
        assert text[len(note) - 1] == " ", note  # the next character starts a new word


# ------------------------------------------------------------------------------------ compare


@pytest.mark.parametrize("damage", ["records-folder", "run-json-folder"])
def test_compare_with_a_damaged_run_names_the_file(real_run, tmp_path, damage):
    env, path = damaged_store(real_run, tmp_path, damage)
    assert_names_the_file(cli(["compare", GOOD, BROKEN], env), path, damage)


@pytest.mark.parametrize(
    ("metric", "heads", "field"),
    [
        ("throughput", ("base throughput inf/s", "new throughput inf/s"), "throughput_ips"),
        ("memory", ("base memory MB", "new memory MB"), "peak_rss_mb"),
    ],
)
def test_compare_labels_its_columns_with_the_metric(real_run, tmp_path, metric, heads, field):
    env = private_store(real_run, tmp_path, GOOD, BROKEN)
    result = cli(["compare", GOOD, BROKEN, "--metric", metric], env)
    assert result.returncode == 0, result.stderr
    rows = table_rows(result.stdout, "cell ")
    header = next(line for line in result.stdout.splitlines() if line.startswith("cell "))
    assert "p50" not in header, header
    solo = next(r for r in real_run["records"] if r["model"] == "solo")
    row = next(r for r in rows if r["cell"] == solo["cell_id"])
    assert row[heads[0]] == row[heads[1]] == format(solo[field], ".4g"), row


# ---------------------------------------------------------------------------------- recommend


@pytest.mark.parametrize("damage", ["records-folder", "run-json-folder"])
def test_recommend_from_a_damaged_run_names_the_file(real_run, tmp_path, damage):
    env, path = damaged_store(real_run, tmp_path, damage)
    args = ["recommend", "--run", BROKEN, "--devices", "local", "--model", "solo"]
    assert_names_the_file(cli(args, env), path, damage)


def test_recommend_by_energy_without_energy_names_the_missing_figure(real_run, tmp_path):
    records = [
        sampled_record("phone", fw, ms, seed, **energy_gap(RAPL_GAP))
        for seed, (fw, ms) in enumerate([("onnxruntime", 2.0), ("ncnn", 3.0)])
    ]
    env = hand_made_store(tmp_path, real_run["env"], records)
    args = ["recommend", "--devices", "phone", "--model", "net", "--metric", "energy"]
    line = assert_one_error_line(cli(args, env))
    assert "no energy per inference" in line and "--energy-source" in line, line
    assert "energy_uj is missing" in line and "no ok cell" not in line, line


def test_recommend_by_energy_says_which_devices_lack_it(real_run, tmp_path):
    records = [
        sampled_record("a", "onnxruntime", 2.0, 1, energy_mj_per_inf=5.0),
        sampled_record("a", "ncnn", 3.0, 2, energy_mj_per_inf=6.0),
        sampled_record("b", "onnxruntime", 2.0, 3),
        sampled_record("b", "ncnn", 3.0, 4),
    ]
    env = hand_made_store(tmp_path, real_run["env"], records)
    args = ["recommend", "--devices", "a,b", "--model", "net", "--metric", "energy"]
    result = cli(args, env)
    assert result.returncode == 0, result.stderr
    assert "no ok cell" not in result.stdout, result.stdout
    columns = {row["framework"].rstrip(" *≈"): row for row in table_rows(result.stdout, "#")}
    assert columns["onnxruntime"]["b"] == columns["ncnn"]["b"] == "no energy", columns
    assert "no framework has energy per inference on every listed device" in result.stdout
    assert "--energy-source" in result.stdout


# ------------------------------------------------------------------------------------ history


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_history_skips_a_damaged_run_with_one_warning(real_run, tmp_path, damage):
    env, path = damaged_store(real_run, tmp_path, damage)
    index = cli(["history"], env)
    assert_no_traceback(index)
    assert index.returncode == 0, index.stderr
    listed = [line.split()[0] for line in index.stdout.splitlines()[1:]]
    assert listed == [GOOD], index.stdout
    warnings = [line for line in index.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1 and str(path) in warnings[0] and BROKEN in warnings[0], warnings
    trend = cli(
        ["history", "--device", "local", "--model", "solo", "--framework", "onnxruntime",
         "--plot", str(tmp_path / "trend.svg")], env,
    )  # fmt: skip
    assert trend.returncode == 0 and GOOD in trend.stdout and BROKEN not in trend.stdout


@pytest.mark.parametrize(
    ("field", "value"),
    [("created_at", 1767225600), ("git_sha", ["abc"]), ("status", {"ok": 1}), ("plan", 7)],
)
def test_history_skips_a_run_json_field_of_the_wrong_type(real_run, tmp_path, field, value):
    env = private_store(real_run, tmp_path, GOOD, BROKEN)
    meta_path = stored(env, BROKEN) / "run.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps(meta | {field: value}))
    index = cli(["history"], env)
    assert_no_traceback(index)
    assert index.returncode == 0 and GOOD in index.stdout and BROKEN not in index.stdout
    warnings = [line for line in index.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1 and str(meta_path) in warnings[0], warnings
    assert f"field {field!r}" in warnings[0], warnings


def test_history_keeps_precisions_apart(real_run, tmp_path):
    def cell(precision: str, ms: float, seed: int) -> Record:
        record = sampled_record("local", "onnxruntime", ms, seed)
        cell_id = f"local/net/onnxruntime/{precision}/t4/call/s1"
        return replace(record, precision=precision, cell_id=cell_id)

    first, second = [cell("fp32", 10.0, 1)], [cell("fp32", 10.5, 2), cell("int8", 4.0, 3)]
    env = hand_made_store(tmp_path, real_run["env"], first, second)
    plot = tmp_path / "trend.svg"
    args = ["history", "--device", "local", "--model", "net", "--framework", "onnxruntime"]
    result = cli([*args, "--plot", str(plot)], env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    trends_end = next(n for n, line in enumerate(lines) if line.startswith("change points"))
    fp32 = table_rows("\n".join(lines[lines.index("fp32:") + 1 :]), "run ")
    int8 = table_rows("\n".join(lines[lines.index("int8:") + 1 : trends_end]), "run ")
    assert fp32[0]["change"] == "-", fp32
    assert float(fp32[1]["change"].rstrip("%")) == pytest.approx(5.0, abs=1.0), fp32  # not -60%
    assert [r["change"] for r in int8] == ["-"] and "/int8/" in int8[0]["cell"], int8
    # Two and one nights: too few for a change point, and each series says so.
    assert lines[trends_end:-1] == [
        "change points (fp32): none in 2 nights",
        "change points (int8): none in 1 night",
    ]
    svg = plot.read_text()
    assert svg.count("<polyline") == 1 and svg.count("<circle") == 3  # one line: fp32's two
    assert ">fp32</text>" in svg and ">int8</text>" in svg


def test_history_of_a_cell_no_run_has_is_one_line_and_no_plot(real_run, tmp_path):
    env = private_store(real_run, tmp_path, GOOD)
    work = tmp_path / "work"
    work.mkdir()
    args = ["history", "--device", "local", "--model", "nosuch", "--framework", "onnxruntime"]
    line = assert_one_error_line(cli(args, env, cwd=work))
    assert "local/nosuch/onnxruntime" in line and "local/solo/onnxruntime" in line, line
    assert list(work.iterdir()) == []


@pytest.mark.parametrize(
    "model",
    [
        pytest.param("../../../escape", id="parent-folders"),
        pytest.param("a/b\\c", id="separators"),
        pytest.param("x" * 300, id="too-long"),
    ],
)
def test_history_plot_of_a_hostile_model_name_lands_in_the_reports_folder(
    real_run, tmp_path, model
):
    record = sampled_record("local", "onnxruntime", 2.0, 1, model=model)
    env = hand_made_store(tmp_path, real_run["env"], [record])
    work = tmp_path / "work"
    work.mkdir()
    args = ["history", "--device", "local", "--model", model, "--framework", "onnxruntime"]
    result = cli(args, env, cwd=work)
    assert result.returncode == 0, result.stderr
    plot = work / result.stdout.splitlines()[-1].removeprefix("plot: ")
    assert plot.is_file() and plot.parent.resolve() == (work / "reports").resolve()
    assert [p.relative_to(work) for p in sorted(work.rglob("*"))] == [
        Path("reports"),
        plot.relative_to(work),
    ]
    assert len(plot.name) < 120


def test_two_models_with_one_file_name_get_ids_without_a_slash(real_run, tmp_path):
    by_model = {r["model"]: r for r in real_run["records"]}
    twins = sorted(m for m in by_model if m != "solo")
    assert len(twins) == 2 and all(m.startswith("tiny-") and "/" not in m for m in twins)
    for record in real_run["records"]:  # the model part of the id is the model's name, whole
        assert record["cell_id"].split("/")[:3] == ["local", record["model"], "onnxruntime"]
    env = private_store(real_run, tmp_path, GOOD)
    work = tmp_path / "work"
    work.mkdir()
    plots = set()
    for model in twins:
        args = ["history", "--device", "local", "--model", model, "--framework", "onnxruntime"]
        result = cli(args, env, cwd=work)
        assert result.returncode == 0 and by_model[model]["cell_id"] in result.stdout
        plots.add(result.stdout.splitlines()[-1])
    assert plots == {f"plot: reports/history-local-{m}-onnxruntime.svg" for m in twins}


# ------------------------------------------------------------------------------------- export


@pytest.mark.parametrize("damage", ["records-folder", "run-json-folder"])
def test_export_of_a_damaged_run_names_the_file_not_the_output(real_run, tmp_path, damage):
    env, path = damaged_store(real_run, tmp_path, damage)
    out = tmp_path / "out.csv"
    line = assert_names_the_file(cli(["export", BROKEN, "--out", str(out)], env), path, damage)
    assert "--out" not in line and not out.exists()


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_writes_nested_columns_as_json(real_run, tmp_path, fmt):
    # Whole objects, as measure/quantized_check.py writes them.
    quant = {
        "method": "qdq",
        "granularity": "per-channel",
        "fp32_fallback_ops": ["Softmax"],
        "calibration": {"n": 8, "sha256": "ab" * 32, "synthetic": True},
        "evaluation": None,
    }
    accuracy = {
        "n": 16,
        "top1_agreement": 0.9375,
        "cosine_min": 0.99,
        "rel_l2_mean": 0.1,
        "sqnr_db": 31.5,
        "worst_output": "y",
        "top1_decisive": 1.0,
        "decisive_rows": 12,
        "passed": True,
        "problem": None,
    }
    record = sampled_record(
        "local", "onnxruntime", 2.0, 1, quant=quant, accuracy=accuracy,
        stages={"samples_ns": {"compute": [1, 2]}, "p50_ms": {"compute": 1.5},
                "boundaries": {"compute": "run()"}},
        round_p50_ms=[1.9, 2.1],
    )  # fmt: skip
    env = hand_made_store(tmp_path, real_run["env"], [record])
    out = tmp_path / f"run.{fmt}"
    result = cli(["export", "--format", fmt, "--out", str(out)], env)
    assert result.returncode == 0, result.stderr
    if fmt == "csv":
        with open(out, newline="") as fh:
            (row,) = list(csv.DictReader(fh))
    else:
        import pandas as pd

        (row,) = pd.read_parquet(out).to_dict("records")
    assert json.loads(row["quant"]) == quant
    assert json.loads(row["accuracy"]) == accuracy
    assert json.loads(row["stages"]) == {
        "p50_ms": {"compute": 1.5},
        "boundaries": {"compute": "run()"},
    }
    assert json.loads(row["round_p50_ms"]) == [1.9, 2.1]


# ------------------------------------------------------------------------------------- report


@pytest.mark.parametrize("damage", ["records-folder", "run-json-folder"])
def test_report_of_a_damaged_run_names_the_file_not_the_output(real_run, tmp_path, damage):
    env, path = damaged_store(real_run, tmp_path, damage)
    out = tmp_path / "reports"
    line = assert_names_the_file(cli(["report", BROKEN, "--out", str(out)], env), path, damage)
    assert "--out" not in line and not out.exists()


def _staged(model: str, seed: int, stage_ns: dict[str, np.ndarray], gap_ns: int) -> Record:
    """A record whose iterations are their stages plus ``gap_ns`` each, as the runner times
    them, with the stages' p50s as it stores them."""
    samples = (sum(stage_ns.values()) + gap_ns).astype(np.int64).tolist()
    stages = {
        "samples_ns": {s: v.astype(np.int64).tolist() for s, v in stage_ns.items()},
        "p50_ms": {s: float(np.percentile(v, 50)) / 1e6 for s, v in stage_ns.items()},
        "boundaries": {},
    }
    record = sampled_record("local", "onnxruntime", 1.0, seed, model=model, stages=stages)
    latency = latency_stats(samples).as_record()
    return replace(record, samples_ns=samples, n_samples=len(samples), latency_ms=latency)


def _stage_rows(md: str, model: str) -> list[dict[str, str]]:
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("**Where the time goes")
                 and f": {model}**" in line)  # fmt: skip
    table = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        table.append([c.strip() for c in line.strip("|").split(" | ")])
    return [dict(zip(table[0], row, strict=True)) for row in table[2:]]


def test_report_unattributed_stage_time_is_taken_per_iteration(real_run, tmp_path):
    n = 300
    ms = 1_000_000
    big_in, big_out = np.zeros(n, bool), np.zeros(n, bool)
    big_in[: n * 2 // 5], big_out[n * 2 // 5 : n * 4 // 5] = True, True
    # The stages cover every iteration whole, but their medians do not add up: copy-in and
    # copy-out are each slow in 40% of iterations (never the same ones), so the iteration's
    # p50 is 7.1 ms while the stages' p50s add up to 5.2.
    skewed = {
        "copy_in": np.where(big_in, 2 * ms, ms // 10),
        "compute": np.full(n, 5 * ms),
        "copy_out": np.where(big_out, 2 * ms, ms // 10),
    }
    even = {"copy_in": np.full(n, ms // 2), "compute": np.full(n, 4 * ms)}
    no_samples = sampled_record("local", "onnxruntime", 6.0, 9, model="older",
                                stages={"p50_ms": {"compute": 4.0}})  # fmt: skip
    long_error = "the converter stopped: " + "this op is not supported " * 20
    failed = Record(
        "r", "local/exact/ncnn/fp32/t4/call/s1", "local", "exact", "ncnn", "fp32", 4, "all",
        "failed", error=long_error, error_kind="inference", peak_rss_mb=55.5,
    )  # fmt: skip
    records = [_staged("exact", 1, skewed, 0), _staged("gapped", 2, even, ms // 2), no_samples]
    env = hand_made_store(tmp_path, real_run["env"], [*records, failed])
    out = tmp_path / "reports"
    result = cli(["report", "--format", "md,html", "--out", str(out)], env)
    assert result.returncode == 0, result.stderr
    md = next(out.glob("*.md")).read_text()
    for model in ("exact", "older"):
        (row,) = _stage_rows(md, model)
        assert not any(key.startswith("unattributed") for key in row), row
    (row,) = _stage_rows(md, "gapped")
    assert row["unattributed ms (%)"] == "0.50 (10%)", row  # 0.5 of 0.5 + 4.0 + 0.5 ms
    assert "per iteration, its time less its stages'" in md
    problem = next(line for line in md.splitlines() if line.startswith("- local / exact / ncnn"))
    reason = problem.split(" — ", 1)[1]
    assert reason.endswith("…") and long_error.startswith(reason[:-1])
    assert long_error[len(reason) - 1] == " ", reason
    html = next(out.glob("*.html")).read_text()
    assert "55.5 MB" not in html
