#!/usr/bin/env python3
"""Does edgebench's llama.cpp cell measure what llama.cpp's own llama-bench measures? And each
generative runtime's figures on the 0.5B model.

Part 1, fidelity. Per model file, edgebench (A) and llama-bench (B) run in turns, A B A B ...,
each block a fresh process on the same GGUF, the same threads, pinned to the same core(s)
(``taskset -c``). A: edgebench's Python runner, started as ``edgebench run`` starts it, with
the spec ``edgebench run --frameworks llama.cpp --prompt-tokens N --gen-tokens M`` sends
(``edgebench run`` itself is not called per block: its planning, output check against the
numpy reference and store would cost more than a short block, and its record pools the blocks
A needs apart). B: ``llama-bench -m FILE -p N -n M -r R -t T -o json``, built from the llama.cpp
that llama-cpp-python's pinned sdist vendors with the options the Python runner's build used
(edgebench/builds/llama_bench.py); its JSON gives each repetition's ``samples_ts``.

What each side times, per repetition:
- pp. llama-bench: one ``llama_decode`` of N random tokens (logits for the last only) and a
  synchronize; no sampling, no first token. edgebench: time to first token of an N-token prompt:
  the KV cells cleared, the ids written into the batch, that same one ``llama_decode``, then the
  greedy step (a numpy view of the last logits and their argmax over the vocabulary) and the
  token handed to the runner's clock. A's pp = N / TTFT.
- tg. llama-bench: M single-token decodes from an empty context (positions 0..M-1), each with a
  synchronize, over M. edgebench: its decode test after a one-token prompt: the gaps between
  successive tokens (positions 1..M-1), each a single-token ``llama_decode`` plus the greedy
  step, so A's tg = (M - 1) / (last token - first token).
Both warm up once per test and clear the KV cells (not its buffers) before each repetition;
batch sizes (2048/512), flash attention (auto), the f16 KV cache and mmap are llama-bench's
defaults on both sides; both compute and copy the last token's logits inside each
``llama_decode`` (llama-bench's tg asks for its token's output too); llama-bench's own thread
pool changes nothing at one thread (the OpenMP build runs a one-thread graph on the calling
thread either way).
What is corrected: the greedy step, which llama-bench does not have (and a deployment does,
to pick a token), is timed per model file in the backend's own loop, in a process pinned to
the same cores (``per_token_costs``), and taken out of A's TTFT once and out of each decode
gap ("fixed" rows; the raw rows beside them). It is timed there, not on a buffer: a decode
streams the weights through the caches, so the argmax then reads the 151936 logits from memory
(about 60-100 us on this host against 14 us over a buffer kept hot). The rest of A's time
outside ``llama_decode`` per token (the Python loop, the ctypes call, the runner's clock) is
printed beside it and not taken out: it is what a Python runner costs. Not corrected: a
different prompt (token values do not change a decode's cost), llama-bench's context of
exactly N (or M) tokens against edgebench's, which holds the longest test plus slack (the
attention reads the used cells padded to 256 either way), and edgebench's decode test
starting at position 1 rather than 0.

The figure is A's tokens/s over B's (>1: edgebench faster): the ratio of medians over all
repetitions, with a 95% bootstrap interval that draws whole block pairs
(edgebench/analysis/block_ratio.py). The goal: the interval inside 1.00 +- 0.03.
``--estimator paired`` takes the median of the pairs' own ratios instead (drift that moves
both blocks of a pair cancels inside each ratio). ``--save-blocks FILE`` writes every row's
blocks (with the settings and notes) as JSON, ``--from-blocks FILE`` prints the table from such
a file again without building or measuring anything, so both estimators can be read off one
run.

How many pairs. A row measures at least ``--min-pairs`` (4) pairs, then more while the next
pair fits in ``--budget-s`` (900 s a model file), at most ``--max-pairs`` (60); ``--pairs N``
asks for exactly N. On the 2-core host one 0.5B pair (both sides, pp512 and tg128, 3
repetitions each) took 69 s (q4_0) and 135 s (q8_0) at one thread on a loaded machine, so the
default budget gives about 7 to 13 pairs a file: a block-pair bootstrap interval narrows as
one over the square root of the pairs, so that is 1.3 to 1.8 times narrower than the old fixed
4 pairs (whose tg interval was +-7% wide), and inside +-3% where blocks agree to about 2-3%
(a quiet machine). Two model files take about half an hour. ``--quick`` stays 2 pairs on
llm-tiny.

Part 2, runtimes (on by default, off with ``--no-runtimes`` or ``--quick``; alone, without part
1 or llama-bench, with ``--runtimes-only``): one ``edgebench run --models M --weights W
--frameworks llama.cpp,openvino-genai --threads 2 --prompt-tokens 512 --gen-tokens 128``
(``--frameworks`` names others) into a results folder, its stored records
read back: pp512 and tg128 tokens/s, time to first token at 512, peak RSS, and each cell's
output check against reference-llm.

llama-bench is built once (minutes) the first time, or alone with ``--build-only``; without
cmake or a compiler the script says so in one line and exits 2.

Usage: python benchmarks/llm_fidelity.py [--models qwen2.5-0.5b-shape|FILE.gguf,...]
           [--weights q4_0,q8_0] [--prompt-tokens 512] [--gen-tokens 128] [--repetitions 3]
           [--budget-s 900] [--min-pairs 4] [--max-pairs 60] [--pairs N] [--threads 1]
           [--cores N] [--seed 0] [--estimator pooled|paired]
           [--save-blocks FILE | --from-blocks FILE] [--no-runtimes | --runtimes-only] [--quick]
           [--frameworks llama.cpp,openvino-genai] [--results-dir DIR] [--build-only]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from llm_fidelity_sides import (
    Block,
    BlockFailed,
    EdgebenchLlama,
    LlamaBench,
    Workload,
    per_token_costs,
    run_runtimes,
    runtime_row,
)

from edgebench.analysis.block_ratio import ESTIMATORS, RatioInterval, bootstrap_ratio
from edgebench.builds import BuildError
from edgebench.builds.llama_bench import build_llama_bench
from edgebench.errors import UserError
from edgebench.models.llm_cache import builtin_llm_path
from edgebench.models.llm_facts import read_llm_facts
from edgebench.paths import cache_dir

TOLERANCE = 0.03
ROWS = (("pp", "pp"), ("pp fixed", "pp_fixed"), ("tg", "tg"), ("tg fixed", "tg_fixed"))
ESTIMATOR_TEXT = {
    "pooled": "ratio of medians over all repetitions",
    "paired": "median of the block pairs' own ratios",
}
#: What a saved run's settings must hold to be printed again.
SETTINGS = ("prompt_tokens", "gen_tokens", "repetitions", "threads", "cores")
#: The default run: block pairs per model file (see the module docs for why these).
MIN_PAIRS, MAX_PAIRS, BUDGET_S = 4, 60, 900.0


def model_files(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """(label, file) per model and weight type: a .gguf as it is, a built-in one per weight."""
    found = []
    for model in [m.strip() for m in args.models.split(",") if m.strip()]:
        if model.endswith(".gguf"):
            found.append((Path(model).name, Path(model)))
            continue
        for weight in [w.strip() for w in args.weights.split(",") if w.strip()]:
            path = builtin_llm_path(model, cache_dir() / "models", weight)
            found.append((f"{model} {weight}", path))
    return found


@dataclass
class Row:
    """One model file's two sides and their blocks (or why they stopped). ``a`` and ``b`` are
    None for a row read back from saved blocks, whose ``notes`` were saved with it."""

    name: str
    a: EdgebenchLlama | None
    b: LlamaBench | None
    a_blocks: list[Block] = field(default_factory=list)
    b_blocks: list[Block] = field(default_factory=list)
    error: str = ""
    saved_notes: list[str] | None = None
    seconds_per_pair: float = 0.0

    def measure(self, args: argparse.Namespace) -> None:
        """Alternate A and B blocks: at least ``min_pairs`` pairs, then more while the next
        pair fits in ``budget_s`` (at most ``max_pairs``)."""
        assert self.a is not None and self.b is not None
        started = time.monotonic()
        pair_s = 0.0
        try:
            while len(self.a_blocks) < args.min_pairs or (
                time.monotonic() - started + pair_s <= args.budget_s
                and len(self.a_blocks) < args.max_pairs
            ):
                begun = time.monotonic()
                done = len(self.a_blocks)
                print(f"[{self.name}] pair {done + 1}", file=sys.stderr, flush=True)
                a_block = self.a.block()
                b_block = self.b.block()
                self.a_blocks.append(a_block)
                self.b_blocks.append(b_block)
                pair_s = time.monotonic() - begun
        except BlockFailed as exc:
            self.error = str(exc)
        if self.a_blocks:
            self.seconds_per_pair = (time.monotonic() - started) / len(self.a_blocks)

    def notes(self) -> list[str]:
        if self.saved_notes is not None:
            return self.saved_notes
        assert self.a is not None and self.b is not None
        costs = self.a.per_token
        return [
            f"A: llama-cpp-python {self.a.version}; per token outside llama_decode "
            f"{costs.loop_ns / 1e3:.1f} us, of it the greedy step (view + argmax over "
            f"{self.a.facts.vocab_size} logits) {costs.greedy_ns / 1e3:.1f} us, taken out of "
            "the fixed rows",
            f"B: {self.b.binary} {self.b.build}",
            f"{len(self.a_blocks)} pairs, {self.seconds_per_pair:.0f} s a pair",
        ]

    def intervals(self, args: argparse.Namespace) -> list[tuple[str, RatioInterval]]:
        out = []
        for label, attr in ROWS:
            a_runs = [getattr(block, attr) for block in self.a_blocks]
            b_runs = [getattr(block, attr) for block in self.b_blocks]
            interval = bootstrap_ratio(
                a_runs, b_runs, draws=args.draws, seed=args.seed, estimator=args.estimator
            )
            out.append((label, interval))
        return out

    def report(self, args: argparse.Namespace) -> int:
        """Print the row's tests; how many meet the goal."""
        if self.error and len(self.a_blocks) < 2:
            print(f"{self.name:<24} ERROR: {self.error}")
            return 0
        met = 0
        for (label, interval), (_, attr) in zip(self.intervals(args), ROWS, strict=True):
            ok = interval.meets(TOLERANCE, TOLERANCE)
            met += ok
            a_med = statistics.median(x for b in self.a_blocks for x in getattr(b, attr))
            b_med = statistics.median(x for b in self.b_blocks for x in getattr(b, attr))
            print(
                f"{self.name:<24} {label:<9} {a_med:>9.2f} {b_med:>9.2f} {interval.ratio:>7.4f} "
                f"[{interval.low:.4f}, {interval.high:.4f}] {interval.half_width:>6.2%} "
                f"{interval.blocks:>4} {'yes' if ok else 'NO'}"
            )
        for note in [*self.notes(), *([f"stopped early: {self.error}"] if self.error else [])]:
            print(f"    {note}")
        return met


def make_row(name: str, path: Path, binary: Path, args: argparse.Namespace) -> Row:
    facts = read_llm_facts(path)
    work = Workload(
        model=path,
        prompt_tokens=args.prompt_tokens,
        gen_tokens=args.gen_tokens,
        repetitions=args.repetitions,
        threads=args.threads,
        cores=args.cores,
    )
    try:
        costs = per_token_costs(path, args.threads, args.cores)
    except BlockFailed as exc:
        return Row(name, None, None, error=str(exc))
    a = EdgebenchLlama(work=work, facts=facts, seed=args.seed, per_token=costs)
    return Row(name, a, LlamaBench(binary=binary, work=work))


def save_blocks(path: Path, rows: list[Row], args: argparse.Namespace) -> None:
    """Every row's blocks and notes, with the settings they ran at, as JSON."""
    kept = [row for row in rows if len(row.a_blocks) >= 2]
    document = {
        "settings": {key: getattr(args, key) for key in SETTINGS},
        "rows": [
            {
                "name": row.name,
                "notes": row.notes(),
                "seconds_per_pair": row.seconds_per_pair,
                "a_blocks": [asdict(block) for block in row.a_blocks],
                "b_blocks": [asdict(block) for block in row.b_blocks],
            }
            for row in kept
        ],
    }
    path.write_text(json.dumps(document, indent=1) + "\n")
    print(f"blocks of {len(kept)} rows saved to {path}")


def saved_rows(path: Path, args: argparse.Namespace) -> list[Row]:
    """The rows a ``--save-blocks`` run wrote; its settings replace ``args``' (for the
    heading). One line and exit 2 when the file cannot be read."""
    try:
        document = json.loads(path.read_text())
        for key in SETTINGS:
            setattr(args, key, document["settings"][key])
        return [
            Row(
                row["name"],
                None,
                None,
                a_blocks=[Block(**block) for block in row["a_blocks"]],
                b_blocks=[Block(**block) for block in row["b_blocks"]],
                saved_notes=[str(note) for note in row["notes"]],
                seconds_per_pair=float(row["seconds_per_pair"]),
            )
            for row in document["rows"]
        ]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"llm_fidelity: cannot read saved blocks {path}: {exc}") from None


def fidelity(args: argparse.Namespace, binary: Path | None) -> None:
    if args.from_blocks:
        rows = saved_rows(args.from_blocks, args)
        source = f"blocks read from {args.from_blocks}"
    else:
        assert binary is not None
        rows = [make_row(name, path, binary, args) for name, path in model_files(args)]
        source = f"at least {args.min_pairs} block pairs, {args.budget_s:g} s a model file"
    print(
        f"fidelity: edgebench llama.cpp (A) vs llama-bench (B), pp{args.prompt_tokens} and "
        f"tg{args.gen_tokens}, {args.threads} thread(s) on core(s) "
        f"{','.join(map(str, args.cores))}, {args.repetitions} repetitions a block, {source}; "
        f"ratio = A/B tokens/s, {ESTIMATOR_TEXT[args.estimator]}, 95% bootstrap over block "
        f"pairs (seed {args.seed})",
        flush=True,
    )
    for row in rows:
        if row.a is not None:
            row.measure(args)
    if args.save_blocks:
        save_blocks(args.save_blocks, rows, args)
    header = (
        f"{'model':<24} {'test':<9} {'A tok/s':>9} {'B tok/s':>9} {'ratio':>7} "
        f"{'95% interval':<18} {'half':>6} {'blks':>4} goal"
    )
    print()
    print(header)
    print("-" * len(header))
    met = sum(row.report(args) for row in rows)
    total = len(rows) * len(ROWS)
    print(
        f"\n{met} of {total} rows meet the goal (interval inside 1 +- {TOLERANCE:g}, "
        f"half-width <= {TOLERANCE:.0%})"
    )


def runtimes(args: argparse.Namespace) -> None:
    folder = args.results_dir or Path(tempfile.mkdtemp(prefix="llm-fidelity-runs-"))
    argv = [
        *("--models", args.runtime_model, "--weights", args.weights),
        *("--frameworks", args.frameworks, "--threads", str(args.runtime_threads)),
        *("--prompt-tokens", str(args.runtime_prompt), "--gen-tokens", str(args.runtime_gen)),
    ]
    print()
    records = run_runtimes(argv, folder)
    p, g = args.runtime_prompt, args.runtime_gen
    header = (
        f"{'framework':<15} {'weight':<6} {f'pp{p}':>8} {f'tg{g}':>8} {'TTFT ms':>9} "
        f"{'peak MB':>8}  {'status':<8} output check against reference-llm"
    )
    print(
        f"runtimes ({args.runtime_model}, {args.runtime_threads} threads; tok/s; run in {folder})"
    )
    print(header)
    print("-" * len(header))
    for record in sorted(records, key=lambda r: (r.precision, r.framework)):
        print(runtime_row(record, p))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="qwen2.5-0.5b-shape", help="built-in or .gguf")
    parser.add_argument("--weights", default="q4_0,q8_0", help="of built-in models")
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--gen-tokens", type=int, default=128)
    parser.add_argument("--repetitions", type=int, default=3, help="per test and block")
    parser.add_argument("--budget-s", type=float, default=BUDGET_S, help="per model file")
    parser.add_argument("--min-pairs", type=int, default=MIN_PAIRS, help="block pairs at least")
    parser.add_argument("--max-pairs", type=int, default=MAX_PAIRS, help="block pairs at most")
    parser.add_argument("--pairs", type=int, help="exactly this many block pairs (no budget)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cores", help="comma-separated; default: the last --threads cores")
    parser.add_argument("--seed", type=int, default=0, help="of the prompt and the bootstrap")
    parser.add_argument("--draws", type=int, default=4000, help="bootstrap draws")
    parser.add_argument("--estimator", choices=ESTIMATORS, default="pooled")
    parser.add_argument("--save-blocks", type=Path, help="write every row's blocks (JSON)")
    parser.add_argument("--from-blocks", type=Path, help="analyse saved blocks, measure nothing")
    parser.add_argument("--no-runtimes", action="store_true", help="skip part 2")
    parser.add_argument("--runtimes-only", action="store_true", help="skip part 1")
    parser.add_argument("--frameworks", default="llama.cpp,openvino-genai", help="of part 2")
    parser.add_argument("--results-dir", type=Path, help="part 2's run (default: a temp folder)")
    parser.add_argument("--quick", action="store_true", help="llm-tiny, seconds")
    parser.add_argument("--build-only", action="store_true", help="build llama-bench, exit")
    args = parser.parse_args(argv)
    if min(args.prompt_tokens, args.repetitions, args.threads) < 1 or args.gen_tokens < 2:
        parser.error("--prompt-tokens, --repetitions, --threads >= 1 and --gen-tokens >= 2")
    if args.pairs is not None:
        args.min_pairs = args.max_pairs = args.pairs
    if args.min_pairs < 2 or args.max_pairs < args.min_pairs or args.budget_s < 0:
        parser.error("block pairs must be >= 2 (the interval draws pairs), --budget-s >= 0")
    allowed = sorted(os.sched_getaffinity(0))
    args.cores = [int(c) for c in args.cores.split(",")] if args.cores else allowed[-args.threads :]
    args.runtime_model, args.runtime_threads = "qwen2.5-0.5b-shape", 2
    args.runtime_prompt, args.runtime_gen = 512, 128
    if args.quick:
        args.models, args.weights, args.repetitions = "llm-tiny", "q8_0", 3
        args.min_pairs = args.max_pairs = 2
        args.prompt_tokens, args.gen_tokens, args.draws = 64, 16, 500
        args.no_runtimes = True
    if args.from_blocks:
        args.no_runtimes = True
    if args.runtimes_only and args.no_runtimes:
        parser.error("--runtimes-only runs part 2: --no-runtimes, --quick, --from-blocks skip it")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    try:
        binary = None
        if not args.from_blocks and not args.runtimes_only:
            binary = build_llama_bench(lambda line: print(line, file=sys.stderr, flush=True))
        if args.build_only:
            print(binary)
            return 0
        if not args.runtimes_only:
            fidelity(args, binary)
        if not args.no_runtimes:
            runtimes(args)
    except (BuildError, UserError) as exc:
        print(f"llm_fidelity: {exc}")
        return 2
    print(f"\n{time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
