"""Do the generative runtimes compute the same model? A generative cell's first-step logits and
greedy tokens against ``reference-llm``, edgebench's numpy decoder run on the host on the same
GGUF and the same prompt ids (as ONNX Runtime on the CPU is the reference for tensor models).

The rule, per weight type (``LOGIT_RULES``): where the runtime gives logits, their cosine with
the reference's must reach the floor and their top-1 token must be the reference's, unless the
reference's own top-2 margin is too small to decide (then the tokens decide nothing either and
the check says so). Where the API gives no logits (OpenVINO GenAI), the first greedy token must
be the reference's under the same margin rule. How many of the check's greedy tokens agree is
recorded either way: after the first, random-weight models' near-ties make later tokens a
figure, not a verdict.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from edgebench.agreement import cosine, rel_l2
from edgebench.measure.reference_outputs import (
    REFERENCE_TIMEOUT_S,
    ReferenceUnavailable,
    reference_result,
)
from edgebench.planning.cells import Cell, correctness_timing
from edgebench.planning.config import TimingConfig
from edgebench.planning.generative_workload import CHECK_PROMPT_TOKENS, GenerativeWorkload
from edgebench.results.output_check_part import OutputCheck, OutputComparison
from edgebench.statuses import Status

if TYPE_CHECKING:
    from edgebench.lab.device import Device as RunnerHost

REFERENCE = "reference-llm"


@dataclass(frozen=True)
class LogitRule:
    """The least cosine of the first-step logits with the reference's, and the reference's
    top-2 margin (in logits) under which top-1 decides nothing."""

    min_cosine: float
    min_margin: float


#: Weight types run as the file holds them, computed by the runtime at its own precision
#: (llama.cpp quantizes activations to 8 bits for its quantized dot products).
LOGIT_RULES = {
    "f32": LogitRule(0.999, 0.01),
    "f16": LogitRule(0.995, 0.05),
    "q8_0": LogitRule(0.99, 0.1),
    "q4_0": LogitRule(0.98, 0.2),
}
DEFAULT_RULE = LogitRule(0.98, 0.2)


@dataclass(frozen=True)
class CheckMaterial:
    """What a runner wrote for the check: the first-step logits (None where the API gives
    none) and the greedy tokens."""

    logits: np.ndarray | None
    tokens: list[int]

    @classmethod
    def load(cls, path: Path) -> CheckMaterial:
        with np.load(path, allow_pickle=False) as data:
            logits = np.asarray(data["logits"], dtype=np.float32) if "logits" in data else None
            tokens = [int(t) for t in data["tokens"]] if "tokens" in data else []
        if logits is not None and logits.size == 0:
            logits = None
        return cls(logits, tokens)


def reference_llm_cell(cell: Cell) -> Cell:
    """``cell`` as the reference runs it: reference-llm on the same file and prompt, one
    repetition of the shortest workload, no telemetry."""
    return Cell(
        device=cell.device,
        model=cell.model,
        framework=REFERENCE,
        precision=cell.precision,
        threads=1,
        cores_selection="all",
        cores=None,
        concurrency=1,
        inputs=[],
        timing=correctness_timing(TimingConfig(timeout_s=REFERENCE_TIMEOUT_S)),
        correctness_only=True,
        stages=False,
        generation=GenerativeWorkload(
            prompt_tokens=(CHECK_PROMPT_TOKENS,), gen_tokens=2, repetitions=1, warmup=0
        ),
    )


class GenerativeReference:
    """reference-llm's check material per model file and seed, computed once by the runner in
    a subprocess on the host."""

    def __init__(self, runner: RunnerHost | None = None) -> None:
        self._runner = runner
        self._cache: dict[tuple[str, int], tuple[CheckMaterial, str]] = {}
        self._lock = threading.Lock()

    def material(self, cell: Cell, seed: int) -> tuple[CheckMaterial, str]:
        """(the reference's material, its version) for ``cell``'s model and prompt."""
        key = (str(cell.model.path), seed)
        with self._lock:
            if key not in self._cache:
                self._cache[key] = self._compute(reference_llm_cell(cell), seed)
            return self._cache[key]

    def _compute(self, reference: Cell, seed: int) -> tuple[CheckMaterial, str]:
        if self._runner is None:
            from edgebench.lab.device import LocalDevice

            self._runner = LocalDevice("reference")
        key = abs(hash((str(reference.model.path), seed)))
        out_path = self._runner.output_path(f"reference-llm-{key:x}")
        spec = reference.spec(seed, save_outputs=out_path)
        try:
            outcome = self._runner.run_runner(spec, None, timeout=reference.timeout_s)
            result = reference_result(outcome.result, "reference-llm")
            if result is None or result.status != Status.OK:
                said = result.error.message if result is not None and result.error else None
                raise ReferenceUnavailable(
                    f"reference-llm failed: {said or outcome.error or 'no result'}"
                )
            local = self._runner.fetch_outputs(out_path)
            if local is None:
                raise ReferenceUnavailable("reference-llm wrote no outputs")
            return CheckMaterial.load(local), result.framework_version or ""
        finally:
            self._runner.discard_outputs(out_path)


#: One reference per process: device workers share it.
_REFERENCE = GenerativeReference()


def check_generation(
    cell: Cell, result_file: Path | None, seed: int, reference: GenerativeReference | None = None
) -> OutputCheck | None:
    """The cell's check material against reference-llm's; None when the runner wrote none."""
    if result_file is None:
        return None
    ran = CheckMaterial.load(result_file)
    expected, version = (reference or _REFERENCE).material(cell, seed)
    rule = LOGIT_RULES.get(cell.precision, DEFAULT_RULE)
    label = f"reference-llm {version} on the host, {cell.precision} weights in float32".strip()
    comparisons = []
    problem = None
    decisive = _margin(expected.logits) >= rule.min_margin if expected.logits is not None else True
    if ran.logits is not None and expected.logits is not None:
        logits = _compare_logits(ran.logits, expected.logits, rule, decisive)
        comparisons.append(logits)
        if not logits.passed:
            problem = (
                f"first-step logits differ from {REFERENCE}: cosine {logits.cosine:.4f} "
                f"(floor {rule.min_cosine}), top-1 {'same' if logits.top1_agreement else 'differs'}"
            )
    tokens = _compare_tokens(ran.tokens, expected.tokens, decisive)
    comparisons.append(tokens)
    if problem is None and not tokens.passed:
        problem = (
            f"first greedy token {ran.tokens[:1]} is not {REFERENCE}'s {expected.tokens[:1]} "
            "(whose top-2 margin decides it)"
        )
    passed = problem is None
    first = comparisons[0]
    check = OutputCheck(
        reference=label,
        tolerance=rule.min_cosine,
        passed=passed,
        max_abs_diff=first.max_abs_diff,
        rel_error=first.rel_error,
        cosine=first.cosine,
        top1_agreement=first.top1_agreement,
        outputs=comparisons,
        problem=problem,
        rule="generative",
        criterion=first.criterion,
        criterion_output=first.name,
        ratio=first.ratio,
    )
    return check


def _margin(logits: np.ndarray) -> float:
    """The gap between the reference's two highest logits."""
    top = np.partition(logits.astype(np.float64), -2)[-2:]
    return float(top[1] - top[0])


def _compare_logits(
    out: np.ndarray, ref: np.ndarray, rule: LogitRule, decisive: bool
) -> OutputComparison:
    if out.shape != ref.shape:
        return OutputComparison(
            "logits",
            "logits",
            list(out.shape),
            float("nan"),
            float("nan"),
            float("nan"),
            0.0,
            passed=False,
            criterion="shape",
        )
    same_top = int(np.argmax(out)) == int(np.argmax(ref))
    similarity = cosine(out, ref)
    passed = similarity >= rule.min_cosine and (same_top or not decisive)
    return OutputComparison(
        name="logits",
        reference_name="logits",
        shape=list(out.shape),
        max_abs_diff=float(np.max(np.abs(out - ref))),
        rel_error=rel_l2(out, ref),
        cosine=similarity,
        top1_agreement=1.0 if same_top else 0.0,
        passed=passed,
        criterion="cosine",
        ratio=(1.0 - similarity) / max(1.0 - rule.min_cosine, 1e-12),
    )


def _compare_tokens(out: list[int], ref: list[int], decisive: bool) -> OutputComparison:
    """The greedy tokens: the share that agree before the first difference is the figure;
    the first token decides when the reference's margin does."""
    agree = 0
    for mine, theirs in zip(out, ref, strict=False):
        if mine != theirs:
            break
        agree += 1
    compared = min(len(out), len(ref))
    first_same = bool(out[:1]) and out[:1] == ref[:1]
    return OutputComparison(
        name="tokens",
        reference_name="tokens",
        shape=[len(out)],
        max_abs_diff=float("nan"),
        rel_error=float("nan"),
        cosine=float("nan"),
        top1_agreement=agree / compared if compared else 0.0,
        passed=first_same or not decisive,
        criterion="first token",
        ratio=0.0 if first_same else 1.0,
    )
