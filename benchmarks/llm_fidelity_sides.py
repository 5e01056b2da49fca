"""The two sides of benchmarks/llm_fidelity.py (edgebench's llama.cpp cell through the Python
runner, and llama.cpp's llama-bench), and its runtimes table read from a stored run.

A side's ``block()`` is one fresh process on the same file, threads and pinned cores; it returns
per repetition the prompt test's and the generation test's tokens per second.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from edgebench.framework_tools import ToolParseError, parse_llama_bench_json
from edgebench.lab.device import LocalDevice
from edgebench.models.llm_facts import LlmFacts
from edgebench.planning.generative_workload import GenerativeWorkload, generation_spec, prompt_ids
from edgebench.results.records import Record
from edgebench.results.store import ResultsStore
from edgebench.runners import protocol

BLOCK_TIMEOUT_S = 1800.0
RUN_TIMEOUT_S = 3600.0


class BlockFailed(Exception):
    """A block ran and gave no figures."""


@dataclass
class Block:
    """One block's tokens/s per repetition: pp (prompt) and tg (generation); ``pp_fixed`` and
    ``tg_fixed`` with the greedy step taken out (edgebench's side only; else the same)."""

    pp: list[float]
    tg: list[float]
    pp_fixed: list[float]
    tg_fixed: list[float]


#: Run by ``per_token_costs`` in a pinned process: the llama.cpp backend's own loop with its
#: greedy step and its ``llama_decode`` calls timed apart, per token (medians, ns).
_PER_TOKEN_PROBE = """
import json, statistics, sys, time
from edgebench.runners.backends.llama_cpp_backend import LlamaCppBackend

clock = time.perf_counter_ns
greedy, decode, stamps = [], [], []


class Timed(LlamaCppBackend):
    def _greedy(self):
        start = clock()
        token = super()._greedy()
        greedy.append(clock() - start)
        return token

    def _decode(self, batch):
        start = clock()
        super()._decode(batch)
        decode.append(clock() - start)


model, threads, tokens, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
backend = Timed()
backend.load(model, threads, tokens + 8)
gaps = []
for run in range(runs + 1):  # the first warms up
    greedy.clear(), decode.clear(), stamps.clear()
    backend.generate([1], tokens, lambda token: stamps.append(clock()))
    if run:
        gaps += [b - a - d for a, b, d in zip(stamps, stamps[1:], decode[1:])]
backend.close()
print(json.dumps({"greedy_ns": statistics.median(greedy), "loop_ns": statistics.median(gaps)}))
"""
PROBE_TOKENS, PROBE_RUNS = 48, 3


@dataclass(frozen=True)
class PerToken:
    """What edgebench's llama.cpp loop adds to each ``llama_decode``, timed in that loop:
    ``greedy_ns`` the greedy step (a view of the last logits and their argmax: work a
    deployment does to pick a token, llama-bench does not), ``loop_ns`` the rest of a gap
    between tokens outside ``llama_decode`` (the greedy step, the Python loop, the ctypes call,
    the runner's clock)."""

    greedy_ns: float
    loop_ns: float


def per_token_costs(model: Path, threads: int, cores: list[int]) -> PerToken:
    """The backend's greedy step and its whole per-token time outside ``llama_decode``, timed
    in its real loop on ``model`` in a process pinned to ``cores``. After a decode has streamed
    the weights through the caches the logits are read from memory: the same argmax over a
    buffer kept hot takes a fraction of it, so it is timed here and not on a buffer."""
    command = [
        *("taskset", "-c", ",".join(map(str, cores)), sys.executable, "-c", _PER_TOKEN_PROBE),
        *(str(model), str(threads), str(PROBE_TOKENS), str(PROBE_RUNS)),
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S, check=False
    )
    try:
        found = json.loads(done.stdout.strip().splitlines()[-1])
        return PerToken(float(found["greedy_ns"]), float(found["loop_ns"]))
    except (IndexError, ValueError, KeyError) as exc:
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        raise BlockFailed(f"timing the greedy step (rc {done.returncode}): {tail or exc}") from None


@dataclass(frozen=True)
class Workload:
    """What both sides run: the file, the two tests' sizes, threads and pinned cores."""

    model: Path
    prompt_tokens: int
    gen_tokens: int
    repetitions: int
    threads: int
    cores: list[int]


@dataclass
class EdgebenchLlama:
    """edgebench's llama.cpp cell through the Python runner, started as ``edgebench run``
    starts it (LocalDevice, taskset), with the spec ``edgebench run`` would send for
    ``--prompt-tokens N --gen-tokens M``: one prefill test of N tokens, the decode test of M."""

    work: Workload
    facts: LlmFacts
    seed: int
    per_token: PerToken
    label: str = "edgebench llama.cpp (Python runner)"
    version: str = ""

    def spec(self) -> dict[str, object]:
        work = self.work
        workload = GenerativeWorkload(
            prompt_tokens=(work.prompt_tokens,),
            gen_tokens=work.gen_tokens,
            repetitions=work.repetitions,
            warmup=1,
        )
        ordinary = self.facts.ordinary_ids().tolist()
        prompt = prompt_ids(ordinary, workload.prompt_length, self.seed)
        return {
            "schema": protocol.SPEC_SCHEMA,
            "model": str(work.model),
            "framework": "llama.cpp",
            "threads": work.threads,
            "cores": work.cores,
            "generation": generation_spec(workload, prompt).to_json(),
        }

    def block(self) -> Block:
        outcome = LocalDevice().run_runner(self.spec(), self.work.cores, BLOCK_TIMEOUT_S)
        result = outcome.result
        if result is None or result.get("status") != "ok":
            why = outcome.error or (result or {}).get("error") or "no result"
            raise BlockFailed(f"{self.label}: {why}")
        self.version = str(result.get("framework_version"))
        generation = result["generation"]
        ttft = [ns for run in generation["prefill"] for ns in run["ttft_ns"]]
        walls = generation["decode_wall_ns"]
        n, gaps = self.work.prompt_tokens, self.work.gen_tokens - 1
        greedy = self.per_token.greedy_ns
        return Block(
            pp=[n * 1e9 / ns for ns in ttft],
            tg=[gaps * 1e9 / ns for ns in walls],
            pp_fixed=[n * 1e9 / (ns - greedy) for ns in ttft],
            tg_fixed=[gaps * 1e9 / (ns - gaps * greedy) for ns in walls],
        )


@dataclass
class LlamaBench:
    """``llama-bench -m FILE -p N -n M -r R -t T -o json`` under ``taskset``: its pp test (the
    prompt's N random tokens in one decode) and its tg test (M single-token decodes from an
    empty context) are two tests of one process, each after its own warm-up."""

    binary: Path
    work: Workload
    label: str = "llama-bench"
    build: dict[str, object] = field(default_factory=dict)

    def argv(self) -> list[str]:
        w = self.work
        return [
            *("taskset", "-c", ",".join(map(str, w.cores)), str(self.binary)),
            *("-m", str(w.model), "-p", str(w.prompt_tokens), "-n", str(w.gen_tokens)),
            *("-r", str(w.repetitions), "-t", str(w.threads), "-o", "json"),
        ]

    def block(self) -> Block:
        proc = subprocess.run(
            self.argv(), capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S, check=False
        )
        try:
            tests = parse_llama_bench_json(proc.stdout)
            pp = next(t for t in tests if t.is_prompt)
            tg = next(t for t in tests if t.is_generation)
        except (ToolParseError, StopIteration):
            tail = " | ".join((proc.stderr.strip() or proc.stdout.strip()).splitlines()[-3:])
            raise BlockFailed(f"{self.label} (rc {proc.returncode}): {tail}") from None
        self.build = {
            "build_commit": pp.build_commit,
            "build_number": pp.build_number,
            "backends": pp.backends,
        }
        return Block(
            pp=pp.samples_ts,
            tg=tg.samples_ts,
            pp_fixed=pp.samples_ts,
            tg_fixed=tg.samples_ts,
        )


# --- the runtimes table: one `edgebench run`, read back from its stored records ------------------


def run_runtimes(argv: list[str], results: Path) -> list[Record]:
    """``edgebench run`` with ``argv`` into ``results``; its stored run's current records.
    Its own output goes to stderr (a progress log), its records are read from the store."""
    command = [sys.executable, "-m", "edgebench", "run", *argv, "--results-dir", str(results)]
    print("$ edgebench " + " ".join(command[3:]), flush=True)
    done = subprocess.run(
        command, stdout=sys.stderr, stderr=sys.stderr, timeout=RUN_TIMEOUT_S, check=False
    )
    runs = ResultsStore(results).runs()
    if not runs:
        raise BlockFailed(f"edgebench run stored no run in {results} (exit {done.returncode})")
    return runs[-1].current_records()


def runtime_row(record: Record, prompt_tokens: int) -> str:
    """One record as a row: pp, tg, TTFT, peak RSS, status and its check's figures."""
    gen = record.generation
    pp = gen.prefill_tokens_per_s(prompt_tokens) if gen else None
    tg = gen.decode_tokens_per_s if gen else None
    ttft = gen.ttft_p50_ms(prompt_tokens) if gen else None
    rss = record.peak_rss_mb
    head = (
        f"{record.framework:<15} {record.precision:<6} {_num(pp, 8, 1)} {_num(tg, 8, 1)} "
        f"{_num(ttft, 9, 1)} {_num(rss, 8, 0)}  {record.status:<8}"
    )
    return f"{head} {check_text(record)}"


def check_text(record: Record) -> str:
    check = record.output_check
    if check is None:
        return record.error or "no output check"
    parts = ["passed" if check.passed else f"FAILED ({check.problem})"]
    for comparison in check.outputs:
        if comparison.name == "tokens":
            parts.append(f"greedy tokens agreeing {comparison.top1_agreement:.0%}")
        else:
            parts.append(
                f"{comparison.name}: cosine {comparison.cosine:.5f}, rel L2 "
                f"{comparison.rel_error:.4f}, top-1 "
                f"{'same' if comparison.top1_agreement >= 1.0 else 'differs'}"
            )
    return "; ".join(parts)


def _num(value: float | None, width: int, digits: int) -> str:
    return f"{value:>{width}.{digits}f}" if value is not None else f"{'-':>{width}}"
