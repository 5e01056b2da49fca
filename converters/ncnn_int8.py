"""INT8 ncnn models from edgebench's calibration set, in the format ncnn's own ncnn2table +
ncnn2int8 write (ncnn wiki "quantized int8 inference"; tools/quantize/).

Only Convolution, ConvolutionDepthWise and InnerProduct run in int8 in ncnn. For each one:

- ``8=`` (int8_scale_term) is set in its param line: 2 for Convolution and InnerProduct (one
  weight scale per output channel), 1 for ConvolutionDepthWise (one per group);
- its weight blob is stored as int8 behind ``INT8_TAG``; the bias stays fp32, and after it come
  the weight scales and one bottom blob (input) scale, all fp32;
- a Convolution or ConvolutionDepthWise whose output feeds only another int8 convolution gets
  100 added to param 8 and that convolution's input scale as its top blob scale: it writes
  int8 straight away ("requantize", as ncnn2int8's fuse_requantize does; 7% faster here).

ncnn scales are multipliers: ``q = round(x * scale)`` clamped to [-127, 127]. Weight scales are
``127 / absmax`` per output channel, ``31 / absmax`` for a 3x3 stride-1 Convolution, whose
int8 Winograd F(4,3) kernels need 6-bit weights (ncnn2table does the same). The input scale is
``127 / threshold``. The threshold is picked on the 2048-bin histogram of ``|x|`` that
ncnn2table builds, but as the one with the least expected squared quantization error, not by
ncnn's KL divergence: on edgebench's models KL clipped saturated ReLU6 activations and cost up
to 14 dB of SQNR (docs/converters.md). Every other layer stays fp32; ncnn quantizes and
dequantizes around the int8 layers at run time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .base import ConversionError
from .calibration_data import check_inputs, iter_samples
from .ncnn_model_file import (
    FP32_TAG,
    INT8_TAG,
    Blob,
    Layer,
    NcnnModel,
    blob_bytes,
    import_ncnn,
    read_model,
    with_param,
    write_model,
)

#: Part of the int8 artifacts' cache key: bump when the int8 bytes change.
WRITER_VERSION = "edgebench-ncnn-int8-1"
METHOD = "edgebench ncnn int8 writer, activation thresholds of least squared error"
GRANULARITY = "per-channel weights, per-tensor activations"
#: Layers that compute nothing, left out of the fp32 fallback list.
PLUMBING = ("Input", "Split")
HISTOGRAM_BINS = 2048


@dataclass(frozen=True)
class Target:
    """A layer that will run in int8."""

    index: int
    layer: Layer
    rows: int  # weight scales: output channels, or groups for ConvolutionDepthWise
    scale_term: int  # the value of param 8
    weight_levels: float  # 127, or 31 where ncnn wants 6-bit weights

    @property
    def bottom(self) -> str:
        return self.layer.bottoms[0]


def quantize_ncnn(out_dir: Path, arrays: dict[str, np.ndarray], source: str) -> dict[str, object]:
    """Rewrite ``out_dir``'s fp32 model.param/model.bin as an int8 model calibrated on
    ``arrays`` (the calibration set, ``source`` names it in errors); returns the quant record.
    """
    param, weights = out_dir / "model.param", out_dir / "model.bin"
    model = read_model(param, weights)
    targets = [t for i, layer in enumerate(model.layers) if (t := _target(model, i, layer))]
    feeds = _ncnn_feeds(json.loads((out_dir / "io.json").read_text())["inputs"], arrays, source)
    thresholds = activation_thresholds(param, weights, feeds, [t.bottom for t in targets])
    scales = {t.index: _input_scale(thresholds[t.bottom]) for t in targets}
    requantize = _requantized(model, targets)
    replaced = {
        t.index: _int8_layer(model, t, scales[t.index], scales.get(requantize.get(t.index, -1)))
        for t in targets
    }
    write_model(model, param, weights, replaced)
    quantized = {t.index for t in targets}
    fallback = {
        layer.type
        for i, layer in enumerate(model.layers)
        if i not in quantized and layer.type not in PLUMBING
    }
    return {"method": METHOD, "granularity": GRANULARITY, "fp32_fallback_ops": sorted(fallback)}


def _target(model: NcnnModel, index: int, layer: Layer) -> Target | None:
    """The layer as an int8 target, or None where it must stay fp32."""
    if layer.type not in ("Convolution", "ConvolutionDepthWise", "InnerProduct"):
        return None
    blobs = model.blobs[index]
    bias = layer.int_param(1 if layer.type == "InnerProduct" else 5, 0)
    if (
        len(layer.bottoms) != 1
        or layer.int_param(8, 0) != 0  # already int8
        or layer.int_param(19, 0) != 0  # dynamic weights: a second input, nothing to store
        or layer.float_param(18, 0.0) != 0.0  # int8 padding would not quantize pad_value
        or len(blobs) != 1 + bias
        or blobs[0].tag != FP32_TAG
    ):
        return None
    num_output = layer.int_param(0, 0)
    if layer.type == "ConvolutionDepthWise":
        return Target(index, layer, layer.int_param(7, 1), 1, 127.0)
    winograd = layer.type == "Convolution" and _is_3x3_stride1(layer)
    return Target(index, layer, num_output, 2, 31.0 if winograd else 127.0)


def _is_3x3_stride1(layer: Layer) -> bool:
    kw, dw, sw = layer.int_param(1, 0), layer.int_param(2, 1), layer.int_param(3, 1)
    kh, dh, sh = layer.int_param(11, kw), layer.int_param(12, dw), layer.int_param(13, sw)
    return (kw, kh, dw, dh, sw, sh) == (3, 3, 1, 1, 1, 1)


def _input_scale(threshold: float) -> np.float32:
    return np.float32(127.0 / threshold if threshold > 0 else 1.0)


def _requantized(model: NcnnModel, targets: list[Target]) -> dict[int, int]:
    """Convolution -> the int8 convolution that is the only reader of its output."""
    readers: dict[str, list[int]] = {}
    for index, layer in enumerate(model.layers):
        for blob in layer.bottoms:
            readers.setdefault(blob, []).append(index)
    convolutions = {t.index for t in targets if t.layer.type != "InnerProduct"}
    pairs = {}
    for index in convolutions:
        after = readers.get(model.layers[index].tops[0], [])
        if len(after) == 1 and after[0] in convolutions:
            pairs[index] = after[0]
    return pairs


def _int8_layer(
    model: NcnnModel, target: Target, input_scale: np.float32, output_scale: np.float32 | None
) -> tuple[str, bytes]:
    """The target's new param line and weight bytes; ``output_scale``: requantize to int8."""
    blobs: list[Blob] = model.blobs[target.index]
    weights = model.floats(blobs[0])
    assert weights is not None  # _target checked the tag
    rows = weights.reshape(target.rows, -1)
    absmax = np.abs(rows).max(axis=1)
    scales = np.where(absmax > 0, target.weight_levels / np.maximum(absmax, 1e-30), 1.0)
    scales = scales.astype(np.float32)
    quantized = _to_int8(rows * scales[:, None]).reshape(-1)
    parts = [blob_bytes(INT8_TAG, quantized)]
    if len(blobs) > 1:  # the bias, as it was
        parts.append(model.weights[blobs[1].offset : blobs[1].offset + blobs[1].size])
    parts += [blob_bytes(None, scales), blob_bytes(None, np.array([input_scale]))]
    scale_term = target.scale_term
    if output_scale is not None:
        parts.append(blob_bytes(None, np.array([output_scale])))
        scale_term += 100
    return with_param(target.layer, 8, scale_term), b"".join(parts)


def _to_int8(values: np.ndarray) -> np.ndarray:
    """ncnn's float2int8: round half away from zero, clamp to [-127, 127]."""
    rounded = np.trunc(values + np.copysign(0.5, values))
    return np.clip(rounded, -127, 127).astype(np.int8)


def _ncnn_feeds(
    inputs: list[dict[str, Any]], arrays: dict[str, np.ndarray], source: str
) -> list[dict[str, np.ndarray]]:
    """The calibration samples as ncnn blobs (in0, ...), checked against the model's inputs."""
    check_inputs(arrays, {e["onnx_name"]: e["onnx_shape"] for e in inputs}, source)
    by_blob = {e["name"]: (e["onnx_name"], e["shape"]) for e in inputs}
    return [
        {
            blob: np.ascontiguousarray(sample[name], np.float32).reshape(shape or [-1])
            for blob, (name, shape) in by_blob.items()
        }
        for sample in iter_samples({e["onnx_name"]: arrays[e["onnx_name"]] for e in inputs})
    ]


def activation_thresholds(
    param: Path, weights: Path, feeds: list[dict[str, np.ndarray]], blobs: list[str]
) -> dict[str, float]:
    """Per blob, the clipping threshold for the fp32 model's activations on ``feeds``: one pass
    for each blob's absmax, one for its histogram of ``|x|`` (zeros left out: they quantize
    exactly; ncnn2table leaves them out too)."""
    wanted = list(dict.fromkeys(blobs))
    absmax = dict.fromkeys(wanted, 0.0)
    for values in _activations(param, weights, feeds, wanted):
        for name, value in values.items():
            absmax[name] = max(absmax[name], float(np.abs(value).max(initial=0.0)))
    live = [name for name in wanted if absmax[name] > 0]
    histograms = {name: np.zeros(HISTOGRAM_BINS, np.int64) for name in live}
    for values in _activations(param, weights, feeds, live):
        for name in live:
            magnitude = np.abs(values[name][values[name] != 0])
            index = (magnitude / absmax[name] * HISTOGRAM_BINS).astype(np.int64)
            bins = np.minimum(index, HISTOGRAM_BINS - 1)
            histograms[name] += np.bincount(bins, minlength=HISTOGRAM_BINS)
    thresholds = dict.fromkeys(wanted, 0.0)
    for name in live:
        thresholds[name] = clipping_bins(histograms[name]) * absmax[name] / HISTOGRAM_BINS
    return thresholds


def _activations(
    param: Path, weights: Path, feeds: list[dict[str, np.ndarray]], blobs: list[str]
) -> Iterator[dict[str, np.ndarray]]:
    """Per sample, the fp32 values of ``blobs``, from the ncnn Extractor."""
    ncnn = import_ncnn()
    net = ncnn.Net()
    net.opt.use_fp16_storage = net.opt.use_fp16_arithmetic = net.opt.use_fp16_packed = False
    net.opt.use_bf16_storage = False
    net.opt.use_int8_inference = False
    # One thread: ncnn's OpenMP threads spin, and on a busy host two of them took 25x longer.
    net.opt.num_threads = 1
    net.opt.lightmode = False  # keep every blob: each sample extracts dozens of them
    if net.load_param(str(param)) != 0 or net.load_model(str(weights)) != 0:
        raise ConversionError("failed", "ncnn cannot load the fp32 model it is to calibrate")
    for feed in feeds:
        yield _extract(ncnn, net, feed, blobs)


def _extract(
    ncnn: Any, net: Any, feed: dict[str, np.ndarray], blobs: list[str]
) -> dict[str, np.ndarray]:
    # The extractor holds Mats from the net's pool allocators: it must go before the net does
    # (on return here), else ncnn aborts with "pool allocator destroyed too early".
    extractor = net.create_extractor()
    for name, value in feed.items():
        # ncnn.Mat(array) borrows the array's memory (with numpy's unaligned channel step):
        # clone while ``value`` is alive, into a Mat of ncnn's own layout.
        extractor.input(name, ncnn.Mat(value).clone())
    values = {}
    for name in blobs:
        status, mat = extractor.extract(name)
        if status != 0:
            raise ConversionError("failed", f"ncnn could not compute blob {name}")
        values[name] = np.array(mat)
    return values


def clipping_bins(histogram: np.ndarray) -> int:
    """The clipping threshold, in bins, with the least expected squared quantization error:
    values above it are clipped to it (error (x - t)^2), values below are rounded to one of
    127 steps of t / 127 (error step^2 / 12). Bin k stands for the values at its centre."""
    h = histogram.astype(np.float64)
    centre = np.arange(len(h)) + 0.5
    # Sums over the bins at or above each threshold t = 1..len(h), via suffix sums.
    above = [np.cumsum((h * centre**p)[::-1])[::-1] for p in (0, 1, 2)]
    t = np.arange(1, len(h) + 1, dtype=np.float64)
    tail = [np.append(a[1:], 0.0) for a in above]  # bins k >= t (bin t-1 ends at t)
    clipped = tail[2] - 2 * t * tail[1] + t**2 * tail[0]
    rounded = (h.sum() - tail[0]) * (t / 127) ** 2 / 12
    return int(t[np.argmin(clipped + rounded)])
