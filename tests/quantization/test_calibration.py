"""The calibration and evaluation sets: what they are read from, how they split, what a bad one
says."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from edgebench.quantization.calibration import (
    SYNTHETIC_SEED,
    CalibrationConfig,
    CalibrationSets,
    CalibrationUnavailable,
    set_sha256,
)
from edgebench.runners.protocol.input_spec import InputSpec
from edgebench.runners.protocol.tensors import make_inputs

INPUTS = [{"name": "x", "shape": [1, 3, 8, 8], "dtype": "float32"}]


def _sets(**config) -> CalibrationSets:
    return CalibrationSets(CalibrationConfig(**config))


def _load(path: Path) -> np.ndarray:
    with np.load(path) as data:
        return data["x"]


def _npy_folder(folder: Path, count: int, seed: int = 0) -> Path:
    folder.mkdir()
    rng = np.random.default_rng(seed)
    for i in range(count):
        np.save(folder / f"s{i:02d}.npy", rng.standard_normal((1, 3, 8, 8)).astype(np.float32))
    return folder


def test_a_folder_of_npy_files_splits_into_calibration_and_held_out_samples(tmp_path: Path):
    folder = _npy_folder(tmp_path / "set", 8)
    sets = _sets(calibration=folder).prepared(INPUTS)
    assert (sets.calibration.n, sets.evaluation.n) == (6, 2)
    files = sorted(folder.iterdir())
    calibration, evaluation = _load(sets.calibration.path), _load(sets.evaluation.path)
    assert calibration.shape == (6, 1, 3, 8, 8)
    # The last quarter is held out, in name order, and never calibrates.
    np.testing.assert_array_equal(evaluation[0], np.load(files[6]))
    np.testing.assert_array_equal(calibration[5], np.load(files[5]))
    assert not sets.calibration.synthetic


def test_the_digest_is_of_the_data_not_of_where_it_lives(tmp_path: Path):
    folder = _npy_folder(tmp_path / "a", 8)
    moved = shutil.copytree(folder, tmp_path / "elsewhere")
    first = _sets(calibration=folder).prepared(INPUTS).calibration.sha256
    second = _sets(calibration=moved).prepared(INPUTS).calibration.sha256
    assert first == second
    (moved / "s00.npy").unlink()
    np.save(moved / "s00.npy", np.zeros((1, 3, 8, 8), np.float32))
    assert _sets(calibration=moved).prepared(INPUTS).calibration.sha256 != first


def test_one_npz_stacking_samples_with_a_separate_eval_set(tmp_path: Path):
    rng = np.random.default_rng(3)
    stacked = rng.standard_normal((5, 1, 3, 8, 8)).astype(np.float32)
    np.savez(tmp_path / "cal.npz", x=stacked)
    np.save(tmp_path / "eval.npy", stacked[:2] * 2)
    sets = _sets(calibration=tmp_path / "cal.npz", eval=tmp_path / "eval.npy").prepared(INPUTS)
    assert (sets.calibration.n, sets.evaluation.n) == (5, 2)
    np.testing.assert_array_equal(_load(sets.calibration.path), stacked)
    np.testing.assert_array_equal(_load(sets.evaluation.path), stacked[:2] * 2)
    assert sets.calibration.sha256 == set_sha256({"x": stacked})


def test_sample_counts_are_capped(tmp_path: Path):
    folder = _npy_folder(tmp_path / "set", 12)
    sets = _sets(calibration=folder, calibration_samples=4, eval_samples=2).prepared(INPUTS)
    assert (sets.calibration.n, sets.evaluation.n) == (4, 2)


def test_the_synthetic_set_is_seeded_recorded_as_such_and_disjoint(tmp_path: Path):
    sets = _sets(calibration_samples=3, eval_samples=2).prepared(INPUTS)
    again = _sets(calibration_samples=3, eval_samples=2).prepared(INPUTS)
    assert sets.calibration.synthetic and sets.evaluation.synthetic
    assert sets.calibration.sha256 == again.calibration.sha256
    calibration, evaluation = _load(sets.calibration.path), _load(sets.evaluation.path)
    spec = [InputSpec("x", [1, 3, 8, 8], "float32")]
    np.testing.assert_array_equal(calibration[1], make_inputs(spec, SYNTHETIC_SEED + 1)["x"])
    # Evaluation continues the seeds where calibration stopped: no sample is in both.
    np.testing.assert_array_equal(evaluation[0], make_inputs(spec, SYNTHETIC_SEED + 3)["x"])
    assert not any(np.array_equal(c, e) for c in calibration for e in evaluation)


def test_images_follow_the_preprocessing_including_bgr(tmp_path: Path):
    folder = tmp_path / "images"
    folder.mkdir()
    pixels = np.zeros((8, 8, 3), np.uint8)
    pixels[..., 0] = 200  # red
    pixels[..., 2] = 50  # blue
    for i in range(4):
        Image.fromarray(pixels).save(folder / f"img{i}.png")
    rgb = _sets(calibration=folder, preprocess="scale=1").prepared(INPUTS)
    bgr = _sets(calibration=folder, preprocess="scale=1;color=bgr;mean=10").prepared(INPUTS)
    first_rgb, first_bgr = _load(rgb.calibration.path)[0, 0], _load(bgr.calibration.path)[0, 0]
    assert first_rgb[0].max() == 200 and first_rgb[2].max() == 50
    assert first_bgr[0].max() == 40 and first_bgr[2].max() == 190


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.mkdir(), "holds no samples"),
        (
            lambda p: (p.mkdir(), np.save(p / "a.npy", np.zeros((1, 3, 4, 4), np.float32))),
            "a.npy: array",
        ),
        (
            lambda p: (p.mkdir(), np.save(p / "a.npy", np.zeros((1, 3, 8, 8), bool))),
            "is bool; input x wants float32",
        ),
        (lambda p: (p.mkdir(), (p / "notes.txt").write_text("hi")), "'notes.txt' is not an image"),
    ],
    ids=["empty", "wrong-shape", "wrong-dtype", "not-a-sample"],
)
def test_a_bad_set_gives_one_line_naming_it(tmp_path: Path, make, message: str):
    folder = tmp_path / "bad"
    make(folder)
    with pytest.raises(CalibrationUnavailable) as caught:
        _sets(calibration=folder).prepared(INPUTS)
    text = str(caught.value)
    assert message in text and str(folder) in text
    assert "\n" not in text


def test_one_sample_and_no_eval_set_leaves_nothing_to_evaluate(tmp_path: Path):
    folder = _npy_folder(tmp_path / "one", 1)
    with pytest.raises(CalibrationUnavailable, match="separate --eval set"):
        _sets(calibration=folder).prepared(INPUTS)


def test_dynamic_shapes_must_be_fixed_first():
    dynamic = [{"name": "x", "shape": [1, 3, -1, -1], "dtype": "float32"}]
    with pytest.raises(CalibrationUnavailable, match="--shape"):
        _sets().prepared(dynamic)
