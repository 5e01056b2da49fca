"""A plan's gate at the end of its run: tonight's cells against the plan's history.

``[thresholds] gate = "history"`` (the default) weighs each cell against its recent good
nights (``analysis.nightly_gate``); a cell with too few of them, and every cell with
``gate = "last-run"``, is compared with the plan's last good run on the raw samples
(``analysis.compare``), as before. docs/nightly.md says what the gate decides and why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from edgebench.analysis.compare import CellVerdict, any_regression, compare_runs
from edgebench.analysis.night_summary import summarize
from edgebench.analysis.nightly import RunInfo, with_run_info
from edgebench.analysis.nightly_gate import GateSettings, gate_cells, recent_rows
from edgebench.planning.config import RunConfig
from edgebench.results.records import Record
from edgebench.results.store import ResultsStore, RunDir, latest_per_cell


class GateOutput(Protocol):
    def comparison(
        self, verdicts: list[CellVerdict], plan_name: str, junit: Path | None
    ) -> None: ...


class Progress(Protocol):
    def message(self, text: str) -> None: ...


def gate_run(
    config: RunConfig,
    store: ResultsStore,
    run_dir: RunDir,
    records: list[Record],
    output: GateOutput,
    progress: Progress,
) -> bool:
    """Judge tonight's records; True when a cell regressed. The verdicts are printed (and
    written as JUnit XML when asked) and the run.json says what they were judged against."""
    from edgebench.analysis.results_index import ResultsIndex

    name = config.plan_name
    if name is None:  # run_session gates only a run that a plan configured
        raise ValueError("gate_run needs a configuration filled by a plan")
    thresholds = config.thresholds
    with ResultsIndex.open(store) as index:  # one sync for both what the gate reads
        rows = index.cell_rows() if thresholds.gate == "history" else []
        last_good = index.last_good_run(name, run_dir.run_id)
    history_verdicts: list[CellVerdict] = []
    by_history: set[str] = set()
    nights = 0
    if thresholds.gate == "history":
        meta = run_dir.metadata()
        info = RunInfo(run_dir.run_id, "", name)
        tonight = [(info, summarize(r, meta)) for r in latest_per_cell(records)]
        nights_rows = with_run_info(rows)
        history = recent_rows(nights_rows, name, run_dir.run_id, thresholds.history_nights)
        settings = GateSettings(thresholds.metric, thresholds.min_effect, thresholds.history_nights)
        history_verdicts, _ = gate_cells(tonight, history, settings)
        by_history = {v.cell_id for v in history_verdicts}
        nights = max((len(rows) for rows in history.values()), default=0)
    rest = [r for r in records if r.cell_id not in by_history]
    last_verdicts: list[CellVerdict] = []
    baseline = RunDir(last_good.folder) if rest and last_good is not None else None
    if rest and baseline is not None:
        last_verdicts = compare_runs(
            baseline.records(),
            rest,
            min_effect=thresholds.min_effect,
            alpha=thresholds.alpha,
            metric=thresholds.metric,
        )
    if by_history:
        progress.message(
            f"plan {name}: {len(by_history)} cells judged against their recent good nights "
            f"(up to {nights})"
        )
    if baseline is not None:
        progress.message(f"plan {name}: compared with {baseline.run_id}")
        run_dir.update_metadata(baseline=baseline.run_id)
    elif not by_history:
        progress.message(f"plan {name}: no earlier good run to compare with; this is the baseline")
        return False
    verdicts = history_verdicts + last_verdicts
    output.comparison(verdicts, name, config.output.junit)
    run_dir.update_metadata(gate=thresholds.gate, gate_history_nights=nights)
    return any_regression(verdicts)
