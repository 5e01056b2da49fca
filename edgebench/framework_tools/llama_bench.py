"""llama.cpp's ``llama-bench``, for generative cells (a GGUF file).

Command (one process runs every test, each after one untimed warm-up run unless
``--no-warmup``)::

    llama-bench -m MODEL.gguf -p 128,512 -n 128 -d 0[,DEPTH] -r REPS -t THREADS -o json

``-p`` gives one prompt-processing test per prompt length (the prompt's N random tokens decoded
in one batch, no token sampled), ``-n`` the token-generation test (N single-token decodes),
``-d`` the context the KV cache holds before each test. llama-bench runs every combination of
its lists, so a cell with a context depth asks for ``-d 0,DEPTH`` and reads its prefill tests
at depth 0 and its decode test at DEPTH (the two other rows are ignored). Cores are pinned by
``taskset`` as for every tool (llama-bench's own ``-C`` mask stays at its default). A cell's
warm-up of 0 turns the warm-up off; more than one is not available (llama-bench warms up once).

Output (``-o json``, to stdout; its log goes to stderr): a JSON array, one object per test::

    {"build_commit": "0c1e570", "build_number": 1, "model_type": "qwen2 ?B Q8_0",
     "n_prompt": 16, "n_gen": 0, "n_depth": 0, "avg_ns": 2343905, "stddev_ns": 1065305,
     "avg_ts": 7612.46, "samples_ns": [1590622, 3097189], "samples_ts": [10059, 5165.97], ...}

What it gives and what it does not: each repetition's total time per test (``samples_ns``),
so prefill tokens/s per prompt length and decode tokens/s (all ``n_gen`` decodes over their
time), the build and the weight type (the last words of ``model_type``). It gives no time to
first token (no token is sampled after the prompt) and no per-token times (a repetition is
timed whole): the record's ``generation.unavailable`` says so, and its latency has no
percentiles, only the mean time per decoded token.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from edgebench.builds.llama_bench import BUILD_COMMAND
from edgebench.models.llm_shapes import WEIGHT_TYPES

from .base import ToolAdapter, ToolCell, ToolParseError, ToolResult
from .generative import SizedTest, ToolGeneration

TOOL = "llama-bench"
RESULT_LINE = "JSON array of tests (-o json)"
#: What llama-bench does not measure, as a generative record states it.
NO_TTFT = (
    "llama-bench decodes the prompt in one batch and samples no token after it: prefill "
    "tokens/s is its figure, time to first token is not measured"
)
NO_PER_TOKEN = (
    "llama-bench times each repetition of a test whole, not each token: no per-token "
    "p50/p90/p99 (the repetitions' times are in decode_wall_ms and prefill_ms)"
)


@dataclass(frozen=True)
class LlamaBenchTest(SizedTest):
    """One row of llama-bench's JSON: a test's sizes and each repetition's time."""

    n_prompt: int
    n_gen: int
    n_depth: int
    samples_ns: list[int]
    samples_ts: list[float]
    avg_ns: float
    build_commit: str
    build_number: int | None
    model_type: str
    #: The ggml backends the build ran with (``CPU``).
    backends: str = ""

    @property
    def version(self) -> str:
        """The build as llama.cpp names it: ``b<number> (<commit>)``."""
        number = f"b{self.build_number} " if self.build_number is not None else ""
        return f"{number}({self.build_commit})"

    @property
    def weight_type(self) -> str:
        """The GGUF's file type as llama.cpp names it (``qwen2 ?B Q8_0`` -> ``q8_0``)."""
        words = self.model_type.split(" ", 2)
        return (words[2] if len(words) == 3 else self.model_type).strip().lower() or "unknown"


def parse_llama_bench_json(text: str) -> list[LlamaBenchTest]:
    """llama-bench's ``-o json`` output as its tests; ToolParseError naming what is wrong
    (not JSON, truncated, a test without its fields) in one line."""
    try:
        rows = json.loads(text)
    except ValueError as exc:
        stripped = text.strip()
        detail = "empty output" if not stripped else f"not JSON: {exc}"
        if stripped.startswith("["):
            detail = f"truncated or malformed JSON: {exc}"
        raise ToolParseError(TOOL, RESULT_LINE, detail) from None
    if not isinstance(rows, list) or not rows:
        raise ToolParseError(TOOL, RESULT_LINE, "not a non-empty JSON array")
    return [_test(row, index) for index, row in enumerate(rows)]


def _test(row: Any, index: int) -> LlamaBenchTest:
    where = f"test {index}"
    if not isinstance(row, Mapping):
        raise ToolParseError(TOOL, RESULT_LINE, f"{where} is not a JSON object")
    sizes = {key: _count(row, key, where) for key in ("n_prompt", "n_gen", "n_depth")}
    samples_ns = _numbers(row, "samples_ns", where)
    samples_ts = _numbers(row, "samples_ts", where)
    if len(samples_ns) != len(samples_ts):
        raise ToolParseError(TOOL, RESULT_LINE, f"{where}: samples_ns and samples_ts differ")
    number = row.get("build_number")
    return LlamaBenchTest(
        **sizes,
        samples_ns=[round(x) for x in samples_ns],
        samples_ts=samples_ts,
        avg_ns=_number(row.get("avg_ns"), "avg_ns", where),
        build_commit=str(row.get("build_commit") or "unknown"),
        build_number=number if isinstance(number, int) and not isinstance(number, bool) else None,
        model_type=str(row.get("model_type") or ""),
        backends=str(row.get("backends") or ""),
    )


def _count(row: Mapping[str, Any], key: str, where: str) -> int:
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ToolParseError(TOOL, RESULT_LINE, f"{where}: {key} is {value!r}, not a count")
    return value


def _number(value: Any, key: str, where: str) -> float:
    """A positive finite JSON number, else ToolParseError naming the field."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolParseError(TOOL, RESULT_LINE, f"{where}: {key} is {value!r}, not a number")
    if not math.isfinite(value) or value <= 0:
        raise ToolParseError(TOOL, RESULT_LINE, f"{where}: {key} is {value!r}, not positive")
    return float(value)


def _numbers(row: Mapping[str, Any], key: str, where: str) -> list[float]:
    values = row.get(key)
    if not isinstance(values, list) or not values:
        raise ToolParseError(TOOL, RESULT_LINE, f"{where}: {key} is {values!r}, not samples")
    return [_number(v, key, where) for v in values]


def generation_of_tests(tests: Sequence[LlamaBenchTest]) -> ToolGeneration:
    """The cell's generative figures from llama-bench's tests: the prompt tests at the
    shallowest depth, the generation test at the deepest."""
    prompts = [t for t in tests if t.is_prompt]
    decodes = [t for t in tests if t.is_generation]
    if not decodes:
        raise ToolParseError(TOOL, "token-generation test (n_gen > 0)", "pass -n")
    decode = max(decodes, key=lambda t: t.n_depth)
    shallowest = min((t.n_depth for t in prompts), default=0)
    prompts = [t for t in prompts if t.n_depth == shallowest]
    return ToolGeneration(
        weight_type=decode.weight_type,
        gen_tokens=decode.n_gen,
        context_depth=decode.n_depth,
        decode_wall_ms=[ns / 1e6 for ns in decode.samples_ns],
        decode_wall_tokens=decode.n_gen,
        prefill_prompt_tokens=[t.n_prompt for t in prompts for _ in t.samples_ns],
        prefill_ms=[ns / 1e6 for t in prompts for ns in t.samples_ns],
        unavailable={"ttft": NO_TTFT, "per_token_latency": NO_PER_TOKEN},
    )


@dataclass(kw_only=True, eq=False)
class LlamaBenchAdapter(ToolAdapter):
    framework = "llama.cpp"
    binary = TOOL
    result_line = RESULT_LINE
    #: The weight type is the GGUF file's: the cell's precision is the file the tool is given.
    precisions = WEIGHT_TYPES
    no_op_profile = "llama-bench times whole tests (prompt, generation), not operators"
    how_to_get = (
        f"`{BUILD_COMMAND}` builds it for this host; for another device build llama.cpp's "
        "llama-bench target for it"
    )

    def command(self, binary_path: str, cell: ToolCell) -> list[str]:
        workload = cell.generation
        if workload is None:
            raise ValueError("llama-bench runs generative cells (a GGUF model) only")
        depths = "0" if workload.context_depth == 0 else f"0,{workload.context_depth}"
        argv = [
            binary_path,
            *("-m", cell.model_path),
            *("-p", ",".join(str(n) for n in workload.prompt_tokens)),
            *("-n", str(workload.gen_tokens)),
            *("-d", depths),
            *("-r", str(workload.repetitions)),
            *("-t", str(cell.threads)),
            *("-o", "json"),
        ]
        return argv + (["--no-warmup"] if workload.warmup == 0 else [])

    def parse(
        self, stdout: str, stderr: str = "", logcat: str = "", *, model_path: str | None = None
    ) -> ToolResult:
        """The JSON is on stdout (the log on stderr is not read)."""
        tests = parse_llama_bench_json(stdout)
        generation = generation_of_tests(tests)
        decode = max((t for t in tests if t.is_generation), key=lambda t: t.n_depth)
        result = ToolResult(
            tool=self.tool,
            tool_version=decode.version,
            # The mean time per decoded token is what the tool states; no percentile is.
            count=len(decode.samples_ns) * decode.n_gen,
            avg_ms=decode.avg_ns / decode.n_gen / 1e6,
            # decode tokens/s: all n_gen decodes over the median repetition's time
            throughput_ips=decode.n_gen * 1e9 / statistics.median(decode.samples_ns),
            raw_lines=[_summary(t) for t in tests],
            generation=generation,
        )
        return result.finish()


def _summary(test: LlamaBenchTest) -> str:
    """One test as a short line for the record's ``native.raw_lines``."""
    name = f"pp{test.n_prompt}" if test.is_prompt else f"tg{test.n_gen}"
    rates = ", ".join(f"{ts:.1f}" for ts in test.samples_ts)
    return f"{name} @ d{test.n_depth}: {rates} tok/s ({test.version}, {test.model_type})"
