"""PaddleOCR's two real exports in tests/data/paddleocr (see its README) and the input they are
judged on: where the files are, the two shapes each is tested at, and a page of text-like
strokes normalised as PaddleOCR does."""

from __future__ import annotations

from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "data" / "paddleocr"
MODELS = {"cls": "ch_ppocr_mobile_v2.0_cls.onnx", "det": "ch_PP-OCRv3_det.onnx"}
SHAPES = {"cls": ([1, 3, 48, 192], [1, 3, 48, 320]), "det": ([1, 3, 256, 320], [1, 3, 160, 480])}
CASES = [(model, shape) for model, shapes in SHAPES.items() for shape in shapes]
IDS = [f"{model}-{shape[2]}x{shape[3]}" for model, shape in CASES]


def page(shape: list[int], model: str) -> np.ndarray:
    """A light page with lines of glyph-like strokes, normalised as PaddleOCR does for
    ``model`` (solid bars are not text to the detector; strokes are)."""
    _, _, h, w = shape
    rng = np.random.default_rng(1)
    image = np.full((h, w, 3), 235.0) + rng.normal(0, 4, (h, w, 3))
    line = min(14, h - 8)
    for top in range(4, h - line - 3, line + 12):
        x, end = int(rng.integers(4, 20)), int(rng.integers(w // 2, w - 8))
        while x < end:
            width = int(rng.integers(6, 11))
            for _ in range(int(rng.integers(2, 5))):
                if rng.random() < 0.5:
                    left = x + int(rng.integers(0, width - 2))
                    image[top : top + line, left : left + 2] = 20
                else:
                    row = top + int(rng.integers(0, line - 2))
                    image[row : row + 2, x : x + width] = 20
            x += width + int(rng.integers(2, 5))
    x = np.clip(image, 0, 255) / 255.0
    mean, std = ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]) if model == "det" else (0.5, 0.5)
    x = (x - np.asarray(mean)) / np.asarray(std)
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)
