"""The generative output check's rule (measure/generative_check.py): first-step logits by
cosine and top-1 where the runtime gives them, the first greedy token where it does not, and a
reference whose top-2 margin is too small decides neither."""

from dataclasses import dataclass

import numpy as np

from edgebench.measure.generative_check import CheckMaterial, check_generation


@dataclass
class FixedReference:
    """The reference's material, as given (the check's rule is what is tested here; the
    reference run itself is tested end to end in test_generative_run.py)."""

    logits: np.ndarray | None
    tokens: list[int]

    def material(self, cell, seed):
        return CheckMaterial(self.logits, self.tokens), "test"


@dataclass(frozen=True)
class CellStub:
    """What the check reads of a cell (the reference stub reads nothing)."""

    precision: str = "f16"


def saved(tmp_path, logits, tokens, name="ran.npz"):
    arrays = {"tokens": np.asarray(tokens, dtype=np.int64)}
    if logits is not None:
        arrays["logits"] = np.asarray(logits, dtype=np.float32)
    path = tmp_path / name
    np.savez(path, **arrays)
    return path


def peaked(vocab=1000, winner=7, margin=3.0, seed=0):
    logits = np.random.default_rng(seed).normal(0.0, 1.0, vocab).astype(np.float32)
    logits[winner] = logits.max() + margin
    return logits


def check(tmp_path, ran_logits, ran_tokens, ref_logits, ref_tokens, precision="f16"):
    reference = FixedReference(ref_logits, ref_tokens)
    path = saved(tmp_path, ran_logits, ran_tokens)
    return check_generation(CellStub(precision), path, seed=0, reference=reference)


def test_the_same_logits_and_tokens_pass(tmp_path):
    ref = peaked()
    result = check(tmp_path, ref + 1e-4, [7, 3, 9], ref, [7, 3, 9])
    assert result.passed and result.problem is None
    logits, tokens = result.outputs
    assert logits.cosine > 0.9999 and logits.top1_agreement == 1.0
    assert tokens.top1_agreement == 1.0


def test_other_logits_are_a_mismatch_naming_the_cosine(tmp_path):
    ref = peaked()
    other = peaked(seed=1, winner=8)
    result = check(tmp_path, other, [8], ref, [7])
    assert not result.passed
    assert "cosine" in result.problem and "reference-llm" in result.problem


def test_a_near_tie_in_the_reference_decides_no_token(tmp_path):
    ref = peaked(margin=0.0)
    ref[8] = ref[7] - 0.001  # the reference's top two are 0.001 apart
    ran = ref.copy()
    ran[8] += 0.002  # the runtime's rounding flips them
    result = check(tmp_path, ran, [8, 1], ref, [7, 1])
    assert result.passed
    assert result.outputs[0].top1_agreement == 0.0


def test_without_logits_the_first_token_decides(tmp_path):
    ref = peaked()
    assert check(tmp_path, None, [7, 1, 2], ref, [7, 5, 6]).passed
    result = check(tmp_path, None, [9, 1, 2], ref, [7, 1, 2])
    assert not result.passed and "first greedy token [9]" in result.problem
    # Tokens agreeing before the first difference are the figure: one of three here.
    assert check(tmp_path, None, [7, 1, 2], ref, [7, 5, 2]).outputs[0].top1_agreement == 1 / 3


def test_quantized_weights_have_a_looser_cosine_floor(tmp_path):
    ref = peaked()
    noisy = ref + np.random.default_rng(3).normal(0.0, 0.12, ref.shape).astype(np.float32)
    assert not check(tmp_path, noisy, [7], ref, [7], precision="f16").passed
    assert check(tmp_path, noisy, [7], ref, [7], precision="q4_0").passed
