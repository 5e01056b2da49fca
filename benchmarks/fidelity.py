#!/usr/bin/env python3
"""Does edgebench measure what the frameworks' own benchmark tools measure?

Per model and pair, edgebench (A) and the framework's own tool (B) run in turns, A B A B ...,
many short blocks, each a fresh process on the same converted artifact, pinned to the same core
(``taskset -c CORE``), one thread, the same warm-up, until the pair's time budget is spent (the
first pair of blocks only sizes the blocks and is dropped). The row is the ratio of medians,
A's over B's, with a 95% bootstrap interval that draws whole block pairs
(edgebench/analysis/block_ratio.py: drift between blocks widens it, drift within a pair
cancels). The goal: the interval inside 1.00 +- 0.02 and its half-width <= 1%.

The pairs (edgebench's runner, the tool). benchmark_app and litert-benchmark come with the
venv's wheels; benchncnn is edgebench's build of it (edgebench.builds.benchncnn, against the
ncnn edgebench-native links). edgebench builds neither MNN's benchmark.out nor TNNTest: give
their paths, or build them against edgebench-native's libraries with
benchmarks/fidelity_tools.py, so both sides run the same code (the newest under
``<cache>/native-runner/tools/<target>/`` is used):

  openvino     Python runner  benchmark_app (the openvino wheel's)   block means (wall clock)
  tflite       Python runner  litert-benchmark (ai-edge-litert's)     block medians
  ncnn         Python runner  benchncnn (edgebench's build of it)     block means
               (excluded while the wheel's ncnn is another version than benchncnn's)
  ncnn-native  edgebench-native  benchncnn                            block means
  mnn          Python runner  MNN benchmark.out (--mnn-benchmark)     block means
               (excluded unless --other-builds: the wheel's MNN is another build)
  mnn-native   edgebench-native  MNN benchmark.out                    block means
  tnn-native   edgebench-native  TNNTest (--tnntest)                  block means

What each tool measures, and how edgebench is made to measure the same:
- benchmark_app runs one untimed first inference it cannot skip (edgebench: warm-up 1), times
  ``infer()`` alone with inputs set once (edgebench: its compute stage), and prints the median
  at 0.01 ms. That median is OpenVINO's ``request.latency``, read inside the binding, while
  edgebench's clock is the Python call's: the Python side of a call (the wrapper, the GIL, the
  return) costs 3-12 us on a hot cache but 50-130 us after a model has flushed it
  (benchmarks/openvino_clock_gap.py reads both clocks on the same calls). So the row takes
  benchmark_app's own wall clock per call instead, Duration / Count, against edgebench's mean.
- litert-benchmark times ``run_by_name`` alone on buffers filled once (edgebench: compute stage)
  and prints the median at 0.01 ms.
- benchncnn runs 8 warm-ups it cannot change (edgebench: warm-up 8), always turns on fp16 storage
  and arithmetic (edgebench: precision fp16), times input + extract (edgebench: the whole
  iteration) and prints only min/max/avg: both sides give the block's mean.
- MNN benchmark.out times ``runSession`` (map/unmap copy nothing on the CPU; edgebench: compute
  stage) and prints only min/max/avg.
- TNNTest times convert-in + Forward + convert-out (edgebench: the whole iteration), -pr HIGH
  (fp32), and prints only min/max/avg.
Tools that print a median give one figure per block and edgebench's block becomes its median;
tools that print an average, its mean. Inputs differ in value only (seeded random, the tools'
fills); these float models take the same time for any values. A row also says how much longer
edgebench's whole iteration (what its p50 reports) is than the part compared.

A tool that is not there skips its row with the reason; the script always exits 0.

``--estimator paired`` takes the median of the pairs' own ratios instead of the ratio of pooled
medians (edgebench/analysis/block_ratio.py says when it is the narrower). ``--save-blocks``
writes every pair's blocks to a JSON file and ``--from-blocks`` analyses such a file again
without measuring, so the two estimators can be compared on the same run.

Usage: python benchmarks/fidelity.py [--models mobilenetv2,vit-tiny] [--pairs openvino,...]
           [--budget-s 60] [--block-s 0.5] [--warmup 10] [--core N] [--seed 0] [--quick]
           [--estimator pooled|paired] [--save-blocks FILE | --from-blocks FILE]
           [--benchncnn PATH] [--mnn-benchmark PATH] [--tnntest PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from importlib.metadata import version
from pathlib import Path

from fidelity_sides import (
    BlockFailed,
    EdgebenchSide,
    MissingTool,
    Side,
    benchmark_app_side,
    benchncnn_side,
    built_version,
    litert_side,
    mnn_benchmark_side,
    tnntest_side,
)

from edgebench.analysis.block_ratio import (
    ESTIMATORS,
    RatioInterval,
    block_spread,
    bootstrap_ratio,
    pairs_needed,
)

PAIRS = ("openvino", "tflite", "ncnn", "ncnn-native", "mnn", "mnn-native", "tnn-native")
BENCHNCNN_WARMUP = 8  # fixed in benchncnn
BENCHMARK_APP_WARMUP = 1  # its untimed first inference
ESTIMATOR_TEXT = {
    "pooled": "the median of all A's samples over all B's",
    "paired": "the median of the block pairs' own ratios",
}
_CONVERTED_RE = re.compile(r"-> (\S+) \(([^,)]+)")


@dataclass
class Pair:
    """One row: edgebench's side (A) against the tool's (B), compared by ``statistic``."""

    model: str
    name: str
    a: Side  # EdgebenchSide when measured
    b: Side
    statistic: str  # "median", "mean": the tool prints one figure per block
    a_blocks: list[list[float]] = field(default_factory=list)
    b_blocks: list[list[float]] = field(default_factory=list)
    error: str = ""
    caveat: str = ""
    notes: list[str] | None = None  # set when read back from saved blocks
    seconds_per_pair: float = 0.0  # wall time of one A block and one B block, measured
    #: tflite: the tool's API over edgebench's on the same work, measured in one process
    #: (GAP_SCRIPTS), with its interval; the row's ratio times it compares one code path.
    api_gap: dict[str, float] | None = None


def convert(model: str, framework: str) -> Path:
    """The artifact's primary file (``edgebench convert``, cached)."""
    made = subprocess.run(
        [sys.executable, "-m", "edgebench", "convert", model, "--to", framework],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    found = _CONVERTED_RE.findall(made.stdout)
    if made.returncode != 0 or not found:
        last = (made.stderr.strip() or made.stdout.strip()).splitlines()[-1:]
        raise MissingTool(f"edgebench convert {model} --to {framework}: {' '.join(last)}")
    folder, first = found[-1]
    return Path(folder) / first


def make_pair(name: str, model: str, args: argparse.Namespace) -> Pair:
    """The row ``name`` for ``model``; MissingTool when its tool or artifact is not there."""
    framework, _, runner = name.partition("-")
    artifact = convert(model, framework)
    warmup, timer, statistic, precision = args.warmup, "compute", "mean", "fp32"
    if framework == "openvino":
        tool: Side = benchmark_app_side(artifact, args.core)
        warmup = BENCHMARK_APP_WARMUP
    elif framework == "tflite":
        tool, statistic = litert_side(artifact, args.core, args.warmup), "median"
    elif framework == "ncnn":
        tool = benchncnn_side(artifact, args.core, args.benchncnn, runner == "native")
        warmup, timer, precision = BENCHNCNN_WARMUP, "iteration", "fp16"
    elif framework == "mnn":
        if runner != "native" and not args.other_builds:
            raise MissingTool(
                f"excluded: the Python runner runs the mnn wheel's MNN {version('mnn')}, "
                f"benchmark.out links edgebench-native's MNN {built_version('mnn')}, another "
                "build with its own kernels (+8.7% on mobilenetv2 with a tight interval, so a "
                "build difference, not a timing one); the mnn-native row compares one library "
                "(--other-builds runs it anyway)"
            )
        tool = mnn_benchmark_side(artifact, args.core, args.warmup, args.mnn_benchmark)
    else:
        tool, timer = tnntest_side(artifact, args.core, args.warmup, args.tnntest), "iteration"
    edgebench = EdgebenchSide(
        framework=framework,
        precision=precision,
        warmup=warmup,
        timer=timer,
        core=args.core,
        artifact=artifact,
        native=runner == "native",
    )
    pair = Pair(model, name, edgebench, tool, statistic)
    if framework == "mnn" and runner != "native":
        pair.caveat = (
            f"the Python runner runs the mnn wheel's MNN {version('mnn')}, the tool links "
            f"edgebench-native's MNN {built_version('mnn')} (another build: its kernels may "
            "differ; the mnn-native row runs the same library)"
        )
    return pair


#: Per pair name, the script that measures its API gap in one process, and its label.
GAP_SCRIPTS = {
    "tflite": ("litert_api_gap.py", "corrected for the API"),
}


def measured_gap(pair: Pair, args: argparse.Namespace) -> dict[str, float]:
    """The row's gap script on its artifact and core: the tool's timer over edgebench's on the
    same work (litert_api_gap.py: CompiledModel/Interpreter)."""
    assert isinstance(pair.a, EdgebenchSide)
    script = Path(__file__).with_name(GAP_SCRIPTS[pair.name][0])
    blocks = ["--blocks", str(args.api_gap_blocks), "--block-iterations", str(pair.a.iterations)]
    argv = [sys.executable, str(script), str(pair.a.artifact), "--core", str(args.core), "--json"]
    done = subprocess.run(
        [*argv, *blocks], capture_output=True, text=True, timeout=1800, check=False
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BlockFailed(f"{script.name} (rc {done.returncode}): {last}")
    return {key: float(value) for key, value in json.loads(lines[-1]).items()}


def gap_note(gap: dict[str, float]) -> str:
    interval = f"{gap['ratio']:.4f} [{gap['low']:.4f}, {gap['high']:.4f}]"
    return (
        f"API: the tool runs CompiledModel.run_by_name, edgebench the Interpreter; in one "
        f"process, alternating, CompiledModel/Interpreter = {interval} "
        f"({gap['interpreter_ms']:.3f} vs {gap['compiled_ms']:.3f} ms, {gap['blocks']:.0f} "
        "block pairs): the corrected row is the ratio times it"
    )


def corrected(interval: RatioInterval, gap: dict[str, float]) -> RatioInterval:
    """The row's ratio times the gap: the tool's timer over edgebench's on the same work (the
    gap's own interval is printed beside it, not folded in)."""
    return replace(
        interval,
        ratio=interval.ratio * gap["ratio"],
        low=interval.low * gap["ratio"],
        high=interval.high * gap["ratio"],
    )


def reduce(block: list[float], statistic: str) -> list[float]:
    """Edgebench's block as the tool gives it: one median or one mean."""
    if statistic == "median":
        return [statistics.median(block)]
    return [statistics.fmean(block)]


def measure(pair: Pair, args: argparse.Namespace) -> None:
    """Alternate A and B blocks until the budget is spent (at least ``min_pairs`` pairs)."""
    iterations = args.block_iterations
    started = time.monotonic()
    if iterations is None:  # a first, dropped pair sizes the blocks
        probe = pair.a.block(20)
        pair.b.block(20)
        ms = statistics.median(probe)
        iterations = max(10, round(args.block_s * 1000.0 / ms))
    pair_s = 0.0
    measuring = time.monotonic()
    while len(pair.a_blocks) < args.min_pairs or (
        time.monotonic() - started + pair_s <= args.budget_s and len(pair.a_blocks) < 500
    ):
        begun = time.monotonic()
        pair.a_blocks.append(reduce(pair.a.block(iterations), pair.statistic))
        pair.b_blocks.append(pair.b.block(iterations))
        pair_s = time.monotonic() - begun
    pair.a.iterations = pair.b.iterations = iterations
    pair.seconds_per_pair = (time.monotonic() - measuring) / len(pair.a_blocks)


def row(pair: Pair, interval: RatioInterval, args: argparse.Namespace, judged: bool = True) -> str:
    """The row's line; ``judged`` False: a figure shown for reference, its goal column blank."""
    ok = interval.meets(args.tolerance, args.max_half_width)
    goal = ("yes" if ok else "NO") if judged else "-"
    a_ms = statistics.median(x for block in pair.a_blocks for x in block)
    b_ms = statistics.median(x for block in pair.b_blocks for x in block)
    return (
        f"{pair.model:<12} {pair.name:<12} {a_ms:>8.3f} {b_ms:>8.3f} {interval.ratio:>7.4f} "
        f"[{interval.low:.4f}, {interval.high:.4f}] {interval.half_width:>6.2%} "
        f"{interval.blocks:>4} {goal:<4}"
    )


def parse_args(argv: list[str] | None, default_pairs: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mobilenetv2,vit-tiny", help="comma-separated")
    parser.add_argument("--pairs", help=f"comma-separated of {PAIRS}")
    parser.add_argument("--budget-s", type=float, default=60.0, help="wall time per pair")
    parser.add_argument("--block-s", type=float, default=0.5, help="timed seconds per block")
    parser.add_argument("--block-iterations", type=int, help="fixed iterations per block")
    parser.add_argument("--min-pairs", type=int, default=3, help="blocks per side at least")
    parser.add_argument("--warmup", type=int, default=10, help="where the tool takes one")
    parser.add_argument("--core", type=int, default=max(os.sched_getaffinity(0)))
    parser.add_argument("--seed", type=int, default=0, help="of the bootstrap")
    parser.add_argument("--draws", type=int, default=4000, help="bootstrap draws")
    parser.add_argument("--tolerance", type=float, default=0.02, help="the goal: 1 +- this")
    parser.add_argument("--max-half-width", type=float, default=0.01)
    parser.add_argument("--estimator", choices=ESTIMATORS, default="pooled")
    parser.add_argument("--save-blocks", type=Path, help="write every pair's blocks (JSON)")
    parser.add_argument("--from-blocks", type=Path, help="analyse saved blocks, measure nothing")
    parser.add_argument(
        "--other-builds",
        action="store_true",
        help="also run the mnn row, whose tool links another MNN build than the wheel's",
    )
    parser.add_argument(
        "--api-gap-blocks",
        type=int,
        default=30,
        help="tflite and openvino: blocks of the in-process API or clock comparison",
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: seconds, not minutes")
    parser.add_argument("--benchncnn", type=Path, help="default: edgebench's build of it")
    parser.add_argument("--mnn-benchmark", type=Path, help="MNN's benchmark.out")
    parser.add_argument("--tnntest", type=Path, help="TNN's TNNTest")
    args = parser.parse_args(argv)
    if args.min_pairs < 2 or args.budget_s < 0 or args.block_s <= 0 or args.draws < 1:
        parser.error("--min-pairs must be >= 2, --budget-s >= 0, --block-s > 0, --draws >= 1")
    if args.block_iterations is not None and args.block_iterations < 1:
        parser.error("--block-iterations must be >= 1")
    if args.pairs is None:
        args.pairs = ",".join(default_pairs.split(",")[:2]) if args.quick else default_pairs
    if args.quick:
        args.models, args.budget_s, args.block_iterations, args.min_pairs = "mobilenetv2", 0, 10, 2
        args.draws, args.api_gap_blocks = 500, 2
    return args


def interval_of(pair: Pair, args: argparse.Namespace) -> RatioInterval:
    return bootstrap_ratio(
        pair.a_blocks, pair.b_blocks, draws=args.draws, seed=args.seed, estimator=args.estimator
    )


def spread_note(pair: Pair, interval: RatioInterval, args: argparse.Namespace) -> str:
    """Which side's blocks disagree, and the pairs the half-width goal would take at that."""
    said = (
        f"block spread (robust CV of the block figures): A {block_spread(pair.a_blocks):.1%}, "
        f"B {block_spread(pair.b_blocks):.1%}"
    )
    if interval.half_width <= args.max_half_width:
        return said
    need = pairs_needed(interval, args.max_half_width)
    said += f"; half-width <= {args.max_half_width:.0%} would take about {need} pairs"
    each = pair.seconds_per_pair
    if each:
        said += f" ({need * each / 60:.0f} min at {each:.1f} s a pair)"
    return said


def pair_notes(pair: Pair) -> list[str]:
    if pair.notes is not None:  # read back from saved blocks
        return pair.notes
    return [*pair.a.notes(""), *pair.b.notes(pair.statistic), pair.caveat]


def save_blocks(path: Path, pairs: list[Pair]) -> None:
    rows = [
        {
            "model": pair.model,
            "pair": pair.name,
            "statistic": pair.statistic,
            "a_label": pair.a.label,
            "b_label": pair.b.label,
            "notes": [note for note in pair_notes(pair) if note],
            "seconds_per_pair": pair.seconds_per_pair,
            "api_gap": pair.api_gap,
            "a_blocks": pair.a_blocks,
            "b_blocks": pair.b_blocks,
        }
        for pair in pairs
        if not pair.error
    ]
    path.write_text(json.dumps({"pairs": rows}, indent=1) + "\n")
    print(f"blocks of {len(rows)} pairs saved to {path}")


def saved_pairs(path: Path) -> dict[tuple[str, str], Pair]:
    """The pairs a ``--save-blocks`` run wrote, by (model, pair name)."""
    try:
        rows = json.loads(path.read_text())["pairs"]
        return {
            (row["model"], row["pair"]): Pair(
                row["model"],
                row["pair"],
                SavedSide(row["a_label"]),
                SavedSide(row["b_label"]),
                row["statistic"],
                a_blocks=row["a_blocks"],
                b_blocks=row["b_blocks"],
                notes=row["notes"],
                seconds_per_pair=float(row.get("seconds_per_pair") or 0.0),
                api_gap=row.get("api_gap"),
            )
            for row in rows
        }
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"fidelity: cannot read saved blocks {path}: {exc}") from None


@dataclass
class SavedSide(Side):
    """A side read back from saved blocks: its label only, it measures nothing."""

    label: str


def main(argv: list[str] | None = None, default_pairs: str = ",".join(PAIRS)) -> int:
    args = parse_args(argv, default_pairs)
    started = time.monotonic()
    names = [p.strip() for p in args.pairs.split(",") if p.strip()]
    unknown = [n for n in names if n not in PAIRS]
    if unknown:
        print(f"fidelity: unknown pair {', '.join(unknown)}; choose from {', '.join(PAIRS)}")
        return 2
    source = f"{args.budget_s:g} s per pair"
    if args.from_blocks:
        source = f"blocks read from {args.from_blocks}"
    print(
        f"fidelity: edgebench (A) vs the framework's tool (B) in alternating blocks, core "
        f"{args.core}, 1 thread, {source}; ratio = A/B, "
        f"{ESTIMATOR_TEXT[args.estimator]}, 95% bootstrap over block pairs (seed {args.seed})"
    )
    header = (
        f"{'model':<12} {'pair':<12} {'A ms':>8} {'B ms':>8} {'ratio':>7} "
        f"{'95% interval':<18} {'half':>6} {'blks':>4} goal"
    )
    results: list[tuple[Pair, RatioInterval | None]] = []
    skipped: list[str] = []
    pairs = saved_pairs(args.from_blocks) if args.from_blocks else None
    for model in [m.strip() for m in args.models.split(",") if m.strip()]:
        for name in names:
            if pairs is not None:
                if (model, name) in pairs:
                    results.append((pairs[model, name], None))
                continue
            try:
                pair = make_pair(name, model, args)
            except MissingTool as exc:
                print(f"skip {model} {name}: {exc}", flush=True)
                skipped.append(f"{model} {name}")
                continue
            print(
                f"[{model} {name}] {pair.a.label} vs {pair.b.label} ...",
                file=sys.stderr,
                flush=True,
            )
            try:
                measure(pair, args)
                if name in GAP_SCRIPTS:
                    pair.api_gap = measured_gap(pair, args)
            except BlockFailed as exc:
                pair.error = str(exc)
            results.append((pair, None))
    results = [(pair, None if pair.error else interval_of(pair, args)) for pair, _ in results]
    if args.save_blocks:
        save_blocks(args.save_blocks, [pair for pair, _ in results])
    print()
    print(header)
    print("-" * len(header))
    met = 0
    for pair, interval in results:
        if interval is None:
            print(f"{pair.model:<12} {pair.name:<12} ERROR: {pair.error}")
            continue
        if pair.api_gap is not None:
            print(row(pair, interval, args, judged=False) + " as measured")
            interval = corrected(interval, pair.api_gap)
            print(row(pair, interval, args) + " " + GAP_SCRIPTS[pair.name][1])
        else:
            print(row(pair, interval, args))
        met += interval.meets(args.tolerance, args.max_half_width)
        notes = [*pair_notes(pair), spread_note(pair, interval, args)]
        if pair.api_gap is not None:
            notes.append(gap_note(pair.api_gap))
        for note in notes:
            if note:
                print(f"    {note}")
    print()
    print(
        f"{met} of {len(results)} rows meet the goal (interval inside 1 +- {args.tolerance:g}, "
        f"half-width <= {args.max_half_width:.0%}); {len(skipped)} skipped"
        f"{' (' + ', '.join(skipped) + ')' if skipped else ''}; {time.monotonic() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
