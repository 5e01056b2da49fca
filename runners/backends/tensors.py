"""Seeded inputs and output summaries: identical on every device and on the host.

The host imports this module (as ``edgebench.runners.backends.tensors``) to build the very same
input tensors for its ONNX Runtime reference, so the output check compares like with like.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .base import BackendError, InputSpec

# --- inputs and outputs ----------------------------------------------------------------------


#: The seeded-input generator, named in every result. The native runner implements the same
#: one (runners/native_runner/seeded.cpp); docs/native-runner.md gives its definition.
INPUT_GENERATOR = "edgebench.ctr/1"
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
_MASK64 = (1 << 64) - 1
#: sqrt(3), written out so both runners use the very same double.
_SQRT3 = 1.7320508075688772


def _mix64(z: Any) -> Any:
    """SplitMix64's finaliser, on a Python int (masked) or a numpy uint64 array (wraps)."""
    import numpy as np

    if isinstance(z, int):
        z = ((z ^ (z >> 30)) * _MIX1) & _MASK64
        z = ((z ^ (z >> 27)) * _MIX2) & _MASK64
        return z ^ (z >> 31)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_MIX1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_MIX2)
    return z ^ (z >> np.uint64(31))


def _fnv1a64(text: str) -> int:
    h = 0xCBF29CE484222325
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x100000001B3) & _MASK64
    return h


def seeded_bits(seed: int, name: str, count: int) -> Any:
    """64 random bits per element of input ``name``: a counter-based generator, so element i
    depends only on (seed, name, i) and any language can produce the same bits."""
    import numpy as np

    key = _mix64((seed * _GOLDEN + _fnv1a64(name)) & _MASK64)
    counter = np.arange(count, dtype=np.uint64)
    return _mix64(np.uint64(key) + counter * np.uint64(_GOLDEN))


def seeded_values(seed: int, name: str, shape: List[int], dtype: Any) -> Any:
    """One seeded input: floats with mean 0 and variance 1 (the sum of four 16-bit uniforms,
    centred and scaled: only exact integer steps and one rounded multiply, so C++ gets the same
    floats bit for bit), integers in [0, 100), or booleans."""
    import numpy as np

    count = 1
    for d in shape:
        count *= int(d)
    bits = seeded_bits(seed, name, count)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        lanes = np.uint64(0xFFFF)
        total = (
            (bits & lanes)
            + ((bits >> np.uint64(16)) & lanes)
            + ((bits >> np.uint64(32)) & lanes)
            + (bits >> np.uint64(48))
        )
        value = ((total.astype(np.float64) + 2.0) / 65536.0 - 2.0) * _SQRT3
        value = value.astype(np.float32).astype(dtype)
    elif dtype.kind == "b":
        value = (bits & np.uint64(1)).astype(bool)
    else:
        value = (bits % np.uint64(100)).astype(dtype)
    return np.ascontiguousarray(value.reshape(shape))


def make_inputs(specs: List[InputSpec], seed: int) -> Dict[str, Any]:
    """Seeded inputs; every framework on every device gets bit-identical tensors."""
    feeds = {}
    for spec in specs:
        if any(d < 0 for d in spec.shape):
            raise BackendError(
                "bad_spec",
                "input %r has dynamic dimensions %s; give a concrete shape"
                % (spec.name, spec.shape),
            )
        feeds[spec.name] = seeded_values(seed, spec.name, spec.shape, spec.dtype)
    return feeds


def summarize_outputs(names: List[str], outputs: List[Any], sample_size: int = 64) -> List[Dict]:
    """Enough of each output to compare runs and frameworks without shipping whole tensors."""
    import numpy as np

    summary = []
    for name, value in zip(names, outputs):
        arr = np.asarray(value)
        flat = arr.reshape(-1)
        entry: Dict[str, Any] = {"name": name, "shape": list(arr.shape), "dtype": str(arr.dtype)}
        if flat.size and arr.dtype.kind in "fiub":
            as_float = flat.astype(np.float64)
            finite = np.isfinite(as_float)
            entry["nonfinite"] = int(flat.size - int(finite.sum()))
            vals = as_float[finite] if entry["nonfinite"] else as_float
            if vals.size:
                entry.update(
                    mean=float(vals.mean()),
                    std=float(vals.std()),
                    min=float(vals.min()),
                    max=float(vals.max()),
                    l2=float(np.sqrt(np.square(vals).sum())),
                )
            entry["argmax"] = int(np.argmax(np.where(finite, as_float, -np.inf)))
            entry["top5"] = [int(i) for i in np.argsort(-as_float, kind="stable")[:5]]
            step = max(1, flat.size // sample_size)
            entry["sample_stride"] = step
            entry["sample"] = [float(v) for v in as_float[::step][:sample_size]]
        summary.append(entry)
    return summary


def save_outputs(path: str, names: List[str], outputs: List[Any]) -> None:
    """Full outputs as an .npz (keys are output names) for the host's output check."""
    import os

    import numpy as np

    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    arrays = {"output_%d" % i: np.asarray(v) for i, v in enumerate(outputs)}
    np.savez(path, __names__=np.array(names), **arrays)


# --- an input file instead of seeded inputs (--input) ------------------------------------------

#: What --preprocess may set for an image: per-channel mean and std (or one number each), the
#: model input's layout, the size the image is resized to (HxW or one number), and the factor
#: raw 0-255 pixels are multiplied by before (x - mean) / std, and the channel order the model
#: wants (rgb, or bgr as OpenCV-trained models do; mean and std are in that order).
PREPROCESS_DEFAULTS = {
    "mean": [0.0],
    "std": [1.0],
    "layout": None,
    "size": None,
    "scale": 1 / 255,
    "color": "rgb",
}
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm")


def _numbers(key: str, text: str) -> List[float]:
    try:
        values = [float(eval_fraction(part)) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError("%s must be numbers separated by commas, not %r" % (key, text)) from None
    if not values:
        raise ValueError("%s is empty" % key)
    return values


def eval_fraction(text: str) -> float:
    """'0.5', '1/255' -> a number."""
    top, sep, bottom = text.strip().partition("/")
    return float(top) / float(bottom) if sep else float(top)


def parse_preprocess(text: str) -> Dict[str, Any]:
    """``mean=0.485,0.456,0.406;std=0.229,0.224,0.225;layout=nchw;size=224x224;scale=1/255``
    (items separated by ';' or spaces, any subset) -> settings; ValueError names the bad item."""
    settings = dict(PREPROCESS_DEFAULTS)
    for item in text.replace(";", " ").split():
        key, sep, value = item.partition("=")
        if not sep or key not in PREPROCESS_DEFAULTS:
            raise ValueError(
                "%r is not key=value with a key among %s" % (item, ", ".join(PREPROCESS_DEFAULTS))
            )
        if key in ("mean", "std"):
            settings[key] = _numbers(key, value)
            if key == "std" and any(v == 0 for v in settings[key]):
                raise ValueError("std must not be 0")
        elif key == "scale":
            settings[key] = _numbers(key, value)[0]
        elif key == "layout":
            if value.lower() not in ("nchw", "nhwc"):
                raise ValueError("layout must be nchw or nhwc, not %r" % value)
            settings[key] = value.lower()
        elif key == "color":
            if value.lower() not in ("rgb", "bgr"):
                raise ValueError("color must be rgb or bgr, not %r" % value)
            settings[key] = value.lower()
        else:
            dims = value.lower().split("x")
            if len(dims) not in (1, 2) or not all(d.isdigit() and int(d) > 0 for d in dims):
                raise ValueError("size must be N or HxW, e.g. 224 or 320x240, not %r" % value)
            settings[key] = [int(dims[0]), int(dims[-1])]
    return settings


def _image_tensor(path: str, spec: InputSpec, settings: Dict[str, Any]) -> Any:
    """An image file as the model's image input: resized, scaled, normalised, laid out."""
    import numpy as np

    try:
        from PIL import Image
    except ImportError:
        raise ValueError(
            "reading images needs Pillow (pip install pillow); or give a .npy"
        ) from None
    if len(spec.shape) != 4 or np.dtype(spec.dtype).kind != "f":
        raise ValueError(
            "an image feeds a 4-d float input; %s is %s %s; give a .npy or .npz"
            % (spec.name, spec.dtype, spec.shape)
        )
    layout = settings["layout"] or (
        "nhwc" if spec.shape[3] in (1, 3, 4) and spec.shape[1] not in (1, 3, 4) else "nchw"
    )
    n, c, h, w = spec.shape if layout == "nchw" else [spec.shape[i] for i in (0, 3, 1, 2)]
    if settings["size"]:
        h, w = settings["size"]
    if h < 1 or w < 1:
        raise ValueError("input %s has a dynamic size; give --preprocess size=HxW" % spec.name)
    if c not in (1, 3):
        raise ValueError("input %s has %d channels; images give 1 or 3" % (spec.name, c))
    try:
        with Image.open(path) as image:
            pixels = image.convert("RGB" if c == 3 else "L").resize((w, h), Image.BILINEAR)
    except OSError as exc:
        raise ValueError("cannot read image %s: %s" % (path, exc)) from None
    hwc = np.asarray(pixels, dtype=np.float64).reshape(h, w, c) * settings["scale"]
    if settings["color"] == "bgr" and c == 3:
        hwc = hwc[:, :, ::-1]
    mean, std = np.asarray(settings["mean"]), np.asarray(settings["std"])
    if mean.size not in (1, c) or std.size not in (1, c):
        raise ValueError("mean and std need 1 or %d values for input %s" % (c, spec.name))
    hwc = (hwc - mean) / std
    one = hwc.transpose(2, 0, 1) if layout == "nchw" else hwc
    return np.repeat(one[None], max(n, 1), axis=0).astype(spec.dtype)


def _fit(name: str, array: Any, spec: InputSpec) -> Any:
    """``array`` as ``spec`` wants it: a missing batch axis added, the dtype of the model."""
    import numpy as np

    if array.ndim == len(spec.shape) - 1:
        array = array[None]
    shape_ok = array.ndim == len(spec.shape) and all(
        d < 0 or d == a for d, a in zip(spec.shape, array.shape)
    )
    if not shape_ok:
        raise ValueError(
            "array %s has shape %s; input %s wants %s"
            % (name, list(array.shape), spec.name, spec.shape)
        )
    wanted = np.dtype(spec.dtype)
    if array.dtype.kind != wanted.kind and not (array.dtype.kind in "iu" and wanted.kind in "iuf"):
        raise ValueError(
            "array %s is %s; input %s wants %s" % (name, array.dtype, spec.name, wanted)
        )
    return np.ascontiguousarray(array.astype(wanted))


def fit_sample(arrays: Dict[str, Any], specs: List[InputSpec], label: str) -> Dict[str, Any]:
    """Arrays by name (or one unnamed array for a one-input model) as the model's inputs
    want them; ValueError says what does not fit. ``label`` names where they came from."""
    import numpy as np

    if not specs:
        return {k: np.ascontiguousarray(v) for k, v in arrays.items() if k}
    by_name = {s.name: s for s in specs}
    if set(by_name) <= set(arrays):
        return {n: _fit(n, arrays[n], s) for n, s in by_name.items()}
    if len(specs) == 1 and len(arrays) == 1:
        ((key, array),) = arrays.items()
        return {specs[0].name: _fit(key or label, array, specs[0])}
    raise ValueError(
        "%s has arrays %s; the model's inputs are %s (an .npz needs one array "
        "per input name)" % (label, sorted(arrays), sorted(by_name))
    )


def read_input_file(
    path: str, specs: List[InputSpec], preprocess: Optional[str] = None
) -> Dict[str, Any]:
    """The tensors of an input file for ``specs``: an ``.npz`` (one array per input name, or
    one array for a one-input model), an ``.npy`` or an image (one-input models), the latter
    through ``--preprocess``. ValueError says what does not fit."""
    import numpy as np

    lower = path.lower()
    if lower.endswith(".npz") or lower.endswith(".npy"):
        if preprocess:
            raise ValueError("--preprocess applies to images; .npy and .npz are fed as they are")
        try:
            loaded = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ValueError("cannot read %s: %s" % (path, exc)) from None
        if isinstance(loaded, np.ndarray):
            arrays = {"": loaded}
        else:
            with loaded:
                arrays = {k: loaded[k] for k in loaded.files}
        return fit_sample(arrays, specs, path)
    if not lower.endswith(IMAGE_SUFFIXES):
        raise ValueError(
            "%s is not an image (%s), .npy or .npz" % (path, ", ".join(IMAGE_SUFFIXES))
        )
    if len(specs) != 1:
        raise ValueError(
            "an image feeds a model with one input; this one has %s (give an .npz)"
            % [s.name for s in specs]
        )
    return {specs[0].name: _image_tensor(path, specs[0], parse_preprocess(preprocess or ""))}


def load_inputs(path: str, specs: List[InputSpec]) -> Dict[str, Any]:
    """On the device: the prepared .npz the spec's ``input_file`` names, checked against the
    model's inputs (every framework and the reference get these very tensors)."""
    try:
        return read_input_file(path, specs)
    except ValueError as exc:
        raise BackendError("bad_spec", "input file: %s" % exc) from None
