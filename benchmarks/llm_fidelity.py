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
batch sizes (2048/512) and flash attention (auto) are llama-bench's defaults on both sides.
What is corrected: the greedy step, which llama-bench does not have, is timed in this process
on the same cores over a vocabulary-sized float32 buffer and taken out of A's TTFT once and out
of each decode gap ("fixed" rows; the raw rows beside them). Not corrected: a different prompt
(token values do not change a decode's cost), llama-bench's context of exactly N (or M) tokens
against edgebench's, which holds the longest test plus slack, and edgebench's decode test
starting at position 1 rather than 0.

The figure is A's tokens/s over B's (>1: edgebench faster): the ratio of medians over all
repetitions, with a 95% bootstrap interval that draws whole block pairs
(edgebench/analysis/block_ratio.py). The goal: the interval inside 1.00 +- 0.03.

Part 2, runtimes (on by default, off with ``--no-runtimes`` or ``--quick``): one ``edgebench
run --models M --weights W --frameworks llama.cpp,openvino-genai --threads 2 --prompt-tokens 512
--gen-tokens 128`` (``--frameworks`` names others) into a results folder, its stored records
read back: pp512 and tg128 tokens/s, time to first token at 512, peak RSS, and each cell's
output check against reference-llm.

llama-bench is built once (minutes) the first time, or alone with ``--build-only``; without
cmake or a compiler the script says so in one line and exits 2.

Usage: python benchmarks/llm_fidelity.py [--models qwen2.5-0.5b-shape|FILE.gguf,...]
           [--weights q4_0,q8_0] [--prompt-tokens 512] [--gen-tokens 128] [--repetitions 3]
           [--pairs 4] [--threads 1] [--cores N] [--seed 0] [--no-runtimes] [--quick]
           [--frameworks llama.cpp,openvino-genai] [--results-dir DIR] [--build-only]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from llm_fidelity_sides import (
    Block,
    BlockFailed,
    EdgebenchLlama,
    LlamaBench,
    Workload,
    greedy_step_ns,
    run_runtimes,
    runtime_row,
)

from edgebench.analysis.block_ratio import bootstrap_ratio
from edgebench.builds import BuildError
from edgebench.builds.llama_bench import build_llama_bench
from edgebench.errors import UserError
from edgebench.models.llm_cache import builtin_llm_path
from edgebench.models.llm_facts import read_llm_facts
from edgebench.paths import cache_dir

TOLERANCE = 0.03
ROWS = (("pp", "pp"), ("pp fixed", "pp_fixed"), ("tg", "tg"), ("tg fixed", "tg_fixed"))


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
    """One model file's two sides and their blocks (or why they stopped)."""

    name: str
    a: EdgebenchLlama
    b: LlamaBench
    a_blocks: list[Block] = field(default_factory=list)
    b_blocks: list[Block] = field(default_factory=list)
    error: str = ""

    def measure(self, pairs: int) -> None:
        try:
            for i in range(pairs):
                print(f"[{self.name}] pair {i + 1}/{pairs}", file=sys.stderr, flush=True)
                self.a_blocks.append(self.a.block())
                self.b_blocks.append(self.b.block())
        except BlockFailed as exc:
            self.error = str(exc)

    def report(self, args: argparse.Namespace) -> int:
        """Print the row's tests; how many meet the goal."""
        if self.error:
            print(f"{self.name:<24} ERROR: {self.error}")
            return 0
        met = 0
        for label, attr in ROWS:
            a_runs = [getattr(block, attr) for block in self.a_blocks]
            b_runs = [getattr(block, attr) for block in self.b_blocks]
            interval = bootstrap_ratio(a_runs, b_runs, draws=args.draws, seed=args.seed)
            ok = interval.meets(TOLERANCE, TOLERANCE)
            met += ok
            a_med = statistics.median(x for run in a_runs for x in run)
            b_med = statistics.median(x for run in b_runs for x in run)
            print(
                f"{self.name:<24} {label:<9} {a_med:>9.2f} {b_med:>9.2f} {interval.ratio:>7.4f} "
                f"[{interval.low:.4f}, {interval.high:.4f}] {interval.blocks:>4} "
                f"{'yes' if ok else 'NO'}"
            )
        print(
            f"    A: llama-cpp-python {self.a.version}; greedy step (view + argmax over "
            f"{self.a.facts.vocab_size} logits) {self.a.greedy_ns / 1e3:.1f} us, taken out of "
            "the fixed rows"
        )
        print(f"    B: {self.b.binary} {self.b.build}")
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
    greedy = greedy_step_ns(facts.vocab_size, args.cores)
    a = EdgebenchLlama(work=work, facts=facts, seed=args.seed, greedy_ns=greedy)
    return Row(name, a, LlamaBench(binary=binary, work=work))


def fidelity(args: argparse.Namespace, binary: Path) -> None:
    print(
        f"fidelity: edgebench llama.cpp (A) vs llama-bench (B), pp{args.prompt_tokens} and "
        f"tg{args.gen_tokens}, {args.threads} thread(s) on core(s) "
        f"{','.join(map(str, args.cores))}, {args.repetitions} repetitions a block, "
        f"{args.pairs} block pairs; ratio = A/B tokens/s, ratio of medians, 95% bootstrap over "
        "block pairs",
        flush=True,
    )
    rows = [make_row(name, path, binary, args) for name, path in model_files(args)]
    for row in rows:
        row.measure(args.pairs)
    header = (
        f"{'model':<24} {'test':<9} {'A tok/s':>9} {'B tok/s':>9} {'ratio':>7} "
        f"{'95% interval':<18} {'blks':>4} goal"
    )
    print()
    print(header)
    print("-" * len(header))
    met = sum(row.report(args) for row in rows)
    total = len(rows) * len(ROWS)
    print(f"\n{met} of {total} rows meet the goal (interval inside 1 +- {TOLERANCE:g})")


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
    parser.add_argument("--pairs", type=int, default=4, help="block pairs per model")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cores", help="comma-separated; default: the last --threads cores")
    parser.add_argument("--seed", type=int, default=0, help="of the prompt and the bootstrap")
    parser.add_argument("--draws", type=int, default=4000, help="bootstrap draws")
    parser.add_argument("--no-runtimes", action="store_true", help="skip part 2")
    parser.add_argument("--frameworks", default="llama.cpp,openvino-genai", help="of part 2")
    parser.add_argument("--results-dir", type=Path, help="part 2's run (default: a temp folder)")
    parser.add_argument("--quick", action="store_true", help="llm-tiny, seconds")
    parser.add_argument("--build-only", action="store_true", help="build llama-bench, exit")
    args = parser.parse_args(argv)
    if min(args.prompt_tokens, args.repetitions, args.threads) < 1 or args.gen_tokens < 2:
        parser.error("--prompt-tokens, --repetitions, --threads >= 1 and --gen-tokens >= 2")
    if args.pairs < 2:
        parser.error("--pairs must be >= 2 (the interval draws block pairs)")
    allowed = sorted(os.sched_getaffinity(0))
    args.cores = [int(c) for c in args.cores.split(",")] if args.cores else allowed[-args.threads :]
    args.runtime_model, args.runtime_threads = "qwen2.5-0.5b-shape", 2
    args.runtime_prompt, args.runtime_gen = 512, 128
    if args.quick:
        args.models, args.weights, args.pairs, args.repetitions = "llm-tiny", "q8_0", 2, 3
        args.prompt_tokens, args.gen_tokens, args.draws = 64, 16, 500
        args.no_runtimes = True
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    try:
        binary = build_llama_bench(lambda line: print(line, file=sys.stderr, flush=True))
        if args.build_only:
            print(binary)
            return 0
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
