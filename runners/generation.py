"""A generative cell, measured: load -> warm-up -> prefill tests -> decode test -> output check.

The runner owns the clock, so every runtime's figures mean the same thing: it calls the
backend's ``generate(prompt, n, on_token)`` and stamps each ``on_token`` call with
``time.perf_counter_ns()``, t0 taken right before ``generate``.

- a prefill test of n tokens feeds ``prompt[:n]`` and asks for one token; its time to first
  token is the first stamp - t0, one per repetition;
- the decode test feeds ``prompt[:context_depth]`` (at least one token) and asks for
  ``gen_tokens`` tokens; its per-token latencies are the gaps between successive stamps
  (``gen_tokens`` - 1 per repetition, pooled in order): the header's ``samples_ns``, so the
  statistics that read a CNN cell's latencies read them. Its CPU time per token
  (``cpu_ns_per_inference``) is the process's CPU time from each repetition's first token to
  its last, over those gaps.

The telemetry window (energy, temperatures) spans the prefill and decode tests; each timed
repetition's span (prefill: start to first token; decode: first token to last) is kept, so the
host takes energy per prefill token and per decoded token over those spans alone.

Each test runs ``warmup`` times untimed, then ``repetitions`` times, one test after the other
(as llama-bench does). Then the output check's material: the first step's logits where the
runtime gives them and ``check_tokens`` greedy tokens, written to ``save_outputs``.

Runs on the device: Python 3.8+, numpy and the runtime; imports nothing from the host package.
"""

from __future__ import annotations

import os
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ContextManager, Dict, List, Optional, Sequence

from .backend_loader import load_generative
from .backends import GenerativeBackend
from .backends.base import inference_errors
from .proc import peak_rss_kb, rss_kb
from .protocol.errors import BackendError
from .protocol.generation_spec import GenerationSpec
from .protocol.result_parts import GenerationPart, PrefillRun
from .protocol.spec import RunSpec
from .timing import TimedWindow, process_cpu_ns

if TYPE_CHECKING:
    from .cell import CellFacts

#: ``stop_reason`` of a generative cell's samples: every asked repetition ran.
STOP_REASON = "target_reached"


@dataclass
class Generated:
    """One ``generate`` call as the runner saw it."""

    t0_ns: int
    stamps_ns: List[int] = field(default_factory=list)
    tokens: List[int] = field(default_factory=list)
    #: The process's CPU time at the first token and at the last.
    cpu_ns: List[int] = field(default_factory=list)

    def ttft_ns(self) -> int:
        return self.stamps_ns[0] - self.t0_ns

    def gaps_ns(self) -> List[int]:
        stamps = self.stamps_ns  # no itertools.pairwise: the runner runs on Python 3.8
        return [stamps[i + 1] - stamps[i] for i in range(len(stamps) - 1)]


def timed_generate(backend: GenerativeBackend, prompt: List[int], new_tokens: int) -> Generated:
    """Run ``generate`` once, stamping each token; BackendError ``inference`` when the runtime
    produced another number of tokens than asked."""
    run = Generated(0)

    def on_token(token: int) -> None:
        run.stamps_ns.append(time.perf_counter_ns())
        run.tokens.append(int(token))
        if len(run.tokens) in (1, new_tokens):
            run.cpu_ns.append(process_cpu_ns())

    run.t0_ns = time.perf_counter_ns()
    backend.generate(prompt, new_tokens, on_token)
    if len(run.tokens) != new_tokens:
        raise BackendError(
            "inference",
            "%s produced %d tokens where %d were asked (greedy, end of sequence ignored)"
            % (backend.name or "the runtime", len(run.tokens), new_tokens),
        )
    return run


def measure_generation(
    spec: RunSpec, facts: CellFacts, hooks: Sequence[ContextManager[Any]] = ()
) -> None:
    """Measure the generative cell of ``spec`` (``spec.generation`` set), keeping in ``facts``
    (cell.py's ``CellFacts``) what each phase returns; ``hooks`` (telemetry) are entered
    around the prefill and decode tests."""
    gen = spec.generation
    assert gen is not None, "a generative cell has a generation spec"
    backend = load_generative(spec.framework, spec.backend)
    facts.framework_version = backend.version()
    facts.rss_before_load_kb = rss_kb()
    if not os.path.exists(spec.model):
        raise BackendError("model_load", "model file not found: %s" % spec.model)
    t0 = time.perf_counter_ns()
    backend.load(spec.model, spec.threads, gen.context())
    facts.load_ns = time.perf_counter_ns() - t0
    part = GenerationPart(backend.weight_type(), gen.gen_tokens, gen.context_depth)
    facts.generation = part
    with inference_errors("generation"):
        run_tests(backend, gen, part, facts, hooks)
        part.kv_cache_bytes = backend.kv_cache_bytes()
        # Before the check: what the runtime holds to give logits is not the tests' memory.
        facts.peak_rss_kb = peak_rss_kb()
        check_material(backend, gen, part, spec.save_outputs, facts)
    facts.ok = True
    backend.close()


def run_tests(
    backend: GenerativeBackend,
    gen: GenerationSpec,
    part: GenerationPart,
    facts: CellFacts,
    hooks: Sequence[ContextManager[Any]],
) -> None:
    """The prefill tests, then the decode test, each warmed up first, inside the telemetry
    ``hooks``; their figures go into ``part`` and ``facts.window`` as they come."""
    samples: List[int] = []
    cpu_ns = 0
    with ExitStack() as stack:
        for hook in hooks:
            stack.enter_context(hook)
        for length in gen.prompt_tokens:
            for _ in range(gen.warmup):
                timed_generate(backend, gen.prompt[:length], 1)
            prefill = PrefillRun(length)
            part.prefill.append(prefill)
            for _ in range(gen.repetitions):
                run = timed_generate(backend, gen.prompt[:length], 1)
                prefill.ttft_ns.append(run.ttft_ns())
                part.prefill_spans_ns.append([run.t0_ns, run.stamps_ns[0]])
        decode_prompt = gen.prompt[: gen.decode_prompt()]
        for _ in range(gen.warmup):
            timed_generate(backend, decode_prompt, gen.gen_tokens)
        for _ in range(gen.repetitions):
            run = timed_generate(backend, decode_prompt, gen.gen_tokens)
            samples.extend(run.gaps_ns())
            part.decode_wall_ns.append(run.stamps_ns[-1] - run.stamps_ns[0])
            part.decode_spans_ns.append([run.stamps_ns[0], run.stamps_ns[-1]])
            cpu_ns += run.cpu_ns[-1] - run.cpu_ns[0]
    timing = {
        "samples_ns": samples,
        "measure_wall_ns": sum(part.decode_wall_ns),
        "stop_reason": STOP_REASON,
        "cpu_ns_per_inference": cpu_ns // len(samples) if samples else None,
    }
    facts.window = TimedWindow(timing, None, None)


def check_material(
    backend: GenerativeBackend,
    gen: GenerationSpec,
    part: GenerationPart,
    path: Optional[str],
    facts: CellFacts,
) -> None:
    """The output check's material: the first step's logits (where the runtime gives them)
    and the greedy tokens after ``prompt[:check_prompt]``, saved to ``path`` when given."""
    prompt = gen.prompt[: gen.check_prompt]
    logits = backend.first_logits(prompt)
    part.check_tokens = timed_generate(backend, prompt, gen.check_tokens).tokens
    if path:
        save_check(path, part.check_tokens, logits)
        facts.outputs_file = path


def save_check(path: str, tokens: List[int], logits: Optional[Any]) -> None:
    """``tokens`` (int64) and, when not None, ``logits`` (float32, 1-D) as an .npz at ``path``
    (the name as given: numpy would add .npz to a path without it)."""
    import numpy as np

    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    arrays: Dict[str, Any] = {"tokens": np.asarray(tokens, dtype=np.int64)}
    if logits is not None:
        arrays["logits"] = np.asarray(logits, dtype=np.float32).reshape(-1)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
