"""`edgebench publish`, the nightly dashboard: built from a store of nights made from one real
run (a step in one device's cells), rendered in headless Chromium, rebuilt incrementally,
refused when another publish holds the folder, and safe with hostile names."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from fakes.chromium import chromium_or_skip, console_problems, open_page, png_distinct_colours
from fakes.cli_checks import ERROR_PREFIX, FAST, cli
from fakes.models import save_conv_model

from edgebench.reporting.site.writer import MANIFEST, SiteWriter

EVIL = "<script>alert(1)</script>"
#: The nights' devices: the first one's cells step up by STEP from night STEP_AT on.
DEVICES = ("lab-a", "lab-b", EVIL, "../x")
NIGHTS, STEP_AT, STEP = 24, 14, 1.25
TILE = re.compile(r'<a class="tile([^"]*)" href="([^"]+)"')


@pytest.fixture(scope="module")
def seed_run(tmp_path_factory: pytest.TempPathFactory, mod_env: dict[str, str]) -> Path:
    """One real run of a small conv model with ONNX Runtime and OpenVINO on this machine."""
    folder = tmp_path_factory.mktemp("seed")
    model = save_conv_model(folder / "conv.onnx", [1, 3, 32, 32])
    env = dict(mod_env, EDGEBENCH_RESULTS=str(folder / "store"))
    args = ["run", "--models", str(model), "--frameworks", "onnxruntime,openvino", *FAST]
    result = cli([*args, "--iterations", "20"], env)
    assert result.returncode == 0, result.stderr
    (run,) = [p for p in (folder / "store").iterdir() if (p / "records.jsonl").is_file()]
    return run


def _scaled(record: dict, factor: float) -> dict:
    latency = {k: v * factor for k, v in (record.get("latency_ms") or {}).items()}
    latency["cv"] = (record.get("latency_ms") or {}).get("cv")
    samples = [int(s * factor) for s in record.get("samples_ns") or []]
    return dict(record, latency_ms=latency, samples_ns=samples)


def add_night(store: Path, seed: Path, night: int) -> str:
    """Night ``night`` of the seed run (a day apart from 2026-03-01): every cell under each of
    DEVICES, with a small deterministic wobble; lab-a's cells step up by STEP from night
    STEP_AT, the night its ONNX Runtime version changes."""
    day = f"202603{night + 1:02d}" if night < 31 else f"202604{night - 30:02d}"
    run_id = f"{day}-020000-{night:04x}"
    meta = json.loads((seed / "run.json").read_text())
    created = f"{day[:4]}-{day[4:6]}-{day[6:]}T02:00:00+00:00"
    folder = store / run_id
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(dict(meta, run_id=run_id, created_at=created)))
    lines = []
    seed_lines = (seed / "records.jsonl").read_text().splitlines()
    for record in (json.loads(line) for line in seed_lines if line):
        for index, device in enumerate(DEVICES):
            stepped = device == DEVICES[0] and night >= STEP_AT
            wobble = 1 + 0.01 * (((night * 7 + index * 3) % 5) - 2)
            copy = _scaled(record, wobble * (STEP if stepped else 1.0))
            copy.update(run_id=run_id, device=device, cell_id=f"{device}/{record['cell_id']}")
            if stepped:
                copy["framework_version"] = f"{record.get('framework_version')}-next"
            lines.append(json.dumps(copy))
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n")
    return run_id


@pytest.fixture
def store(tmp_path: Path, seed_run: Path) -> Path:
    folder = tmp_path / "store"
    for night in range(NIGHTS):
        add_night(folder, seed_run, night)
    return folder


def publish(env: dict[str, str], store: Path, out: Path, *more: str):
    return cli(["publish", "--results-dir", str(store), "--out", str(out), *more], env)


def _tiles(site: Path) -> list[tuple[str, str]]:
    return TILE.findall((site / "index.html").read_text(encoding="utf-8"))


def test_site_renders_and_links_in_chromium(
    store: Path, tmp_path: Path, mod_env: dict[str, str]
) -> None:
    exe = chromium_or_skip()
    site = tmp_path / "site"
    result = publish(mod_env, store, site)
    assert result.returncode == 0, result.stderr
    cells = len(DEVICES) * 2
    assert f"{cells} cell series over {NIGHTS} nights" in result.stdout
    assert re.search(r"\d+ pages written, 0 unchanged", result.stdout), result.stdout

    tiles = _tiles(site)
    assert len(tiles) == cells
    stepped = [href for classes, href in tiles if "worse" in classes]
    assert len(stepped) == 2, tiles  # lab-a's two engines, and no other cell
    for _, href in tiles:
        target = (site / href).resolve()
        assert target.is_file() and target.is_relative_to(site.resolve()), href

    shot = tmp_path / "index.png"
    proc = open_page(exe, site / "index.html", tmp_path / "profile", screenshot=shot)
    assert shot.exists(), proc.stderr[-2000:]
    assert not console_problems(proc.stderr), console_problems(proc.stderr)
    assert png_distinct_colours(shot.read_bytes())[2] > 20, "index.html looks blank"

    # The stepped tile leads to its cell page, whose chart marks the change point.
    dom = open_page(exe, site / stepped[0], tmp_path / "profile")
    assert not console_problems(dom.stderr), console_problems(dom.stderr)
    assert "lab-a/" in dom.stdout
    # One step, marked on the chart of the values and on the chart up to the p99.
    markers = re.findall(r'<g class="change-point"><title>([^<]+)</title>', dom.stdout)
    assert len(markers) == 2 and len(set(markers)) == 1, markers
    assert "framework_version" in dom.stdout and "-next" in dom.stdout  # what changed
    assert 'class="p99-band"' in dom.stdout

    for page in ("regressions.html", "runs.html"):
        proc = open_page(exe, site / page, tmp_path / "profile")
        assert proc.returncode == 0 and not console_problems(proc.stderr), proc.stderr[-2000:]
    regressions = (site / "regressions.html").read_text(encoding="utf-8")
    assert regressions.count("<tr><td>2026-03-15</td>") == 2
    runs = (site / "runs.html").read_text(encoding="utf-8")
    assert runs.count("full report</a>") == NIGHTS
    assert len(list((site / "reports").iterdir())) == NIGHTS


def test_hostile_names_are_escaped_and_confined(
    store: Path, tmp_path: Path, mod_env: dict[str, str]
) -> None:
    site = tmp_path / "site"
    assert publish(mod_env, store, site).returncode == 0
    pages = [p for p in site.rglob("*.html") if p.parent.name != "reports"]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "<script" not in text, page
        assert not re.search(r"https?://", text), page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in (site / "index.html").read_text()
    resolved = site.resolve()
    assert all(p.resolve().is_relative_to(resolved) for p in site.rglob("*"))
    assert not (tmp_path / "x").exists() and not list(tmp_path.glob("*.html"))


def test_rebuild_writes_only_what_changed(
    store: Path, seed_run: Path, tmp_path: Path, mod_env: dict[str, str]
) -> None:
    site = tmp_path / "site"
    assert publish(mod_env, store, site).returncode == 0
    reports = {p.name: p.stat().st_mtime_ns for p in (site / "reports").iterdir()}
    again = publish(mod_env, store, site)
    assert again.returncode == 0, again.stderr
    assert "0 pages written" in again.stdout, again.stdout

    new_run = add_night(store, seed_run, NIGHTS)
    after = publish(mod_env, store, site)
    assert after.returncode == 0, after.stderr
    written, unchanged = map(
        int, re.search(r"(\d+) pages written, (\d+) unchanged", after.stdout).groups()
    )
    # The overview, regressions and runs pages, every cell page (each has a new night), the
    # new run's page and its report; the other nights' pages and reports stay as they were.
    assert written == 3 + len(DEVICES) * 2 + 2, after.stdout
    assert unchanged == NIGHTS * 2, after.stdout
    now = {p.name: p.stat().st_mtime_ns for p in (site / "reports").iterdir()}
    assert set(now) - set(reports) == {f"{new_run}.html"}
    assert all(now[name] == mtime for name, mtime in reports.items())
    manifest = json.loads((site / MANIFEST).read_text())
    assert new_run in manifest["reports"]


def test_second_publish_into_the_same_folder_is_refused(
    store: Path, tmp_path: Path, mod_env: dict[str, str]
) -> None:
    site = tmp_path / "site"
    with SiteWriter(site):  # a publish in progress holds the folder's lock
        result = publish(mod_env, store, site)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR_PREFIX), result.stderr
    assert f"another edgebench publish is writing {site} (pid " in lines[0]
    assert "wait for it or pass another --out" in lines[0]
    assert publish(mod_env, store, site).returncode == 0  # the lock went with its holder


@pytest.mark.parametrize(
    ("setup", "more", "words"),
    [
        ("file", (), "is a file, not a folder"),
        ("foreign", (), "holds files but no edgebench site"),
        ("", ("--since", "last week"), "write it as YYYY-MM-DD"),
        ("", ("--since", "2026-13-45"), "'--since': '2026-13-45' is no calendar date"),
        ("", ("--since", "2026-02-31"), "'--since': '2026-02-31' is no calendar date"),
        ("", ("--since", "0000-00-00"), "'0000-00-00' is no calendar date (year 0 is out of"),
    ],
)
def test_bad_publish_input_is_one_line(
    store: Path, tmp_path: Path, mod_env: dict[str, str], setup: str, more: tuple, words: str
) -> None:
    site = tmp_path / "site"
    if setup == "file":
        site.write_text("not a folder")
    elif setup == "foreign":
        site.mkdir()
        (site / "notes.txt").write_text("mine")
    result = publish(mod_env, store, site, *more)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR_PREFIX) and words in lines[0], lines
    assert "Traceback" not in result.stderr


def test_another_metric_has_its_own_units_and_no_latency_band(
    store: Path, tmp_path: Path, mod_env: dict[str, str]
) -> None:
    site = tmp_path / "site"
    result = publish(mod_env, store, site, "--metric", "throughput")
    assert result.returncode == 0, result.stderr
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "inf/s" in index
    (_, href), *_ = _tiles(site)
    page = (site / href).read_text(encoding="utf-8")
    assert "throughput (inf/s)" in page and 'class="p99-band"' not in page


def test_a_run_deleted_from_the_store_leaves_the_site(
    store: Path, tmp_path: Path, mod_env: dict[str, str]
) -> None:
    site = tmp_path / "site"
    assert publish(mod_env, store, site).returncode == 0
    oldest = min(p for p in store.iterdir() if p.is_dir())
    shutil.rmtree(oldest)
    after = publish(mod_env, store, site)
    assert after.returncode == 0, after.stderr
    assert ", 2 removed;" in after.stdout, after.stdout  # its run page and its report
    assert f"over {NIGHTS - 1} nights" in after.stdout
    assert not list(site.rglob(f"{oldest.name}*"))
    assert oldest.name not in (site / "runs.html").read_text(encoding="utf-8")


def test_a_damaged_manifest_is_not_trusted(
    store: Path, tmp_path: Path, mod_env: dict[str, str]
) -> None:
    site = tmp_path / "site"
    first = publish(mod_env, store, site)
    assert first.returncode == 0, first.stderr
    (site / MANIFEST).write_text('{"version": 1, "pages": {"index.html": ')
    (site / ".tmp-999999").mkdir()  # left by an interrupted build
    (site / ".tmp-999999" / "half.html").write_text("<html")
    again = publish(mod_env, store, site)
    assert again.returncode == 0, again.stderr
    assert "unreadable" in again.stderr and "every page is written again" in again.stderr
    assert "Traceback" not in again.stderr
    assert re.search(r"[1-9]\d* pages written, 0 unchanged", again.stdout), again.stdout
    assert json.loads((site / MANIFEST).read_text())["pages"]
    assert not (site / ".tmp-999999").exists()
