"""Seeded inputs, input files and output summaries: identical on every device and on the host,
which builds the very same input tensors for its ONNX Runtime reference (like with like)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .errors import BackendError
from .input_spec import InputSpec

# --- inputs and outputs ----------------------------------------------------------------------

#: The seeded-input generator, named in every result. The native runner implements the same
#: one (runners/native_runner/seeded.cpp); docs/edgebench-native.md gives its definition.
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


def c_order(value: Any, dtype: Any = None) -> Any:
    """``value`` C-ordered (copied only if needed), a 0-d tensor kept 0-d: numpy's
    ascontiguousarray makes it 1-d, which a framework refuses for a rank-0 input."""
    import numpy as np

    return np.asarray(value, dtype=dtype, order="C")


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
    return c_order(value.reshape(shape))


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
    np.savez(path, __names__=np.array(names), **arrays)  # type: ignore[arg-type]  # stub: keywords as options


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
#: The longest side ``--preprocess size`` may ask for: an edgebench limit, far above what a
#: vision model takes, so a typo cannot ask for a tensor of hundreds of gigabytes.
MAX_IMAGE_SIDE = 16384
#: The most pixels an image file may have to be decoded (Pillow's own decompression-bomb limit).
MAX_DECODED_PIXELS = 89478485
#: Bytes per pixel and channel while an image becomes a tensor: the decoded byte, the float64
#: working copy and the float32 result (with margin); times the batch for the result.
_WORK_BYTES = 13
_RESULT_BYTES = 8


def available_memory() -> Optional[int]:
    """MemAvailable of /proc/meminfo in bytes, or None where there is none."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def image_tensor_bytes(height: int, width: int, channels: int = 3, batch: int = 1) -> int:
    """About how much memory turning an image into a ``height`` x ``width`` tensor takes."""
    return height * width * channels * (_WORK_BYTES + _RESULT_BYTES * max(batch, 1))


def image_size_problem(
    height: int, width: int, channels: int = 3, batch: int = 1, available: Optional[int] = None
) -> Optional[str]:
    """Why an image cannot become a ``height`` x ``width`` tensor on this host ("too large: at
    most ..."), naming the limit and where it comes from: ``MAX_IMAGE_SIDE`` or the memory
    /proc/meminfo says is available, whichever is smaller. None when it can."""
    import math

    per_pixel = image_tensor_bytes(1, 1, channels, batch)
    available = available_memory() if available is None else available
    side, source = MAX_IMAGE_SIDE, "edgebench's limit for images"
    if available is not None:
        fits = math.isqrt(available // per_pixel)
        if fits < side:
            side = fits
            source = (
                "what the %.1f GB this host has available holds (MemAvailable in /proc/meminfo)"
                % (available / 1e9)
            )
    too_big = max(height, width) > MAX_IMAGE_SIDE or (
        available is not None and height * width * per_pixel > available
    )
    if not too_big:
        return None
    return "too large: at most %dx%d pixels, %s" % (side, side, source)


def check_fits_memory(what: str, needed: int, available: Optional[int] = None) -> None:
    """ValueError when ``needed`` bytes exceed the memory this host has available."""
    available = available_memory() if available is None else available
    if available is not None and needed > available:
        raise ValueError(
            "%s needs about %.1f GB, more than the %.1f GB this host has available "
            "(MemAvailable in /proc/meminfo)" % (what, needed / 1e9, available / 1e9)
        )


def _numbers(key: str, text: str) -> List[float]:
    import math

    values = []
    for part in text.split(","):
        if not part.strip():
            continue
        try:
            value = eval_fraction(part)
        except ValueError:
            raise ValueError(
                "%s must be numbers separated by commas, not %r" % (key, text)
            ) from None
        except ZeroDivisionError:
            raise ValueError("%s: %r divides by zero" % (key, part.strip())) from None
        if not math.isfinite(value):
            raise ValueError("%s must be finite numbers, not %r" % (key, part.strip()))
        values.append(value)
    if not values:
        raise ValueError("%s is empty" % key)
    return values


def eval_fraction(text: str) -> float:
    """'0.5', '1/255' -> a number (ZeroDivisionError for '1/0')."""
    top, sep, bottom = text.strip().partition("/")
    return float(top) / float(bottom) if sep else float(top)


def parse_preprocess(text: str) -> Dict[str, Any]:
    """``mean=0.485,0.456,0.406;std=0.229,0.224,0.225;layout=nchw;size=224x224;scale=1/255``
    (items separated by ';' or spaces, any subset) -> settings; ValueError names the bad item.
    A size must fit this host's memory (``image_size_problem``): it is parsed on the host."""
    settings = dict(PREPROCESS_DEFAULTS)
    for item in text.replace(";", " ").split():
        key, sep, value = item.partition("=")
        if not sep or key not in PREPROCESS_DEFAULTS:
            raise ValueError(
                "%r is not key=value with a key among %s" % (item, ", ".join(PREPROCESS_DEFAULTS))
            )
        if key in ("mean", "std"):
            numbers = _numbers(key, value)
            if key == "std" and any(v == 0 for v in numbers):
                raise ValueError("std must not be 0")
            settings[key] = numbers
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
            if len(dims) not in (1, 2) or not all(
                d.isascii() and d.isdigit() and d.strip("0") for d in dims
            ):
                raise ValueError("size must be N or HxW, e.g. 224 or 320x240, not %r" % value)
            # Digits beyond a dozen are over any limit (and past Python's int parsing limit).
            sides = [int(d) if len(d) <= 12 else 10**12 for d in dims]
            problem = image_size_problem(sides[0], sides[-1])
            if problem:
                raise ValueError("size=%s is %s" % (value, problem))
            settings[key] = [sides[0], sides[-1]]
    return settings


def _image_tensor(path: str, spec: InputSpec, settings: Dict[str, Any]) -> Any:
    """An image file as the model's image input: resized, scaled, normalised, laid out."""
    import numpy as np

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
    problem = image_size_problem(h, w, c, max(n, 1))
    if problem:
        raise ValueError("input %s as a %dx%d image is %s" % (spec.name, h, w, problem))
    mean, std = np.asarray(settings["mean"]), np.asarray(settings["std"])
    if mean.size not in (1, c) or std.size not in (1, c):
        raise ValueError("mean and std need 1 or %d values for input %s" % (c, spec.name))
    pixels = _decoded(path, "RGB" if c == 3 else "L", (w, h))
    hwc = np.asarray(pixels, dtype=np.float64).reshape(h, w, c)
    del pixels
    # In place: one float64 copy of the image at a time.
    hwc *= settings["scale"]
    if settings["color"] == "bgr" and c == 3:
        hwc = hwc[:, :, ::-1]
    hwc -= mean
    hwc /= std
    one = (hwc.transpose(2, 0, 1) if layout == "nchw" else hwc).astype(spec.dtype)
    del hwc
    if not np.isfinite(one).all():
        raise ValueError(
            "--preprocess scale, mean and std turn image %s into values beyond %s "
            "(Inf); give smaller factors" % (path, np.dtype(spec.dtype).name)
        )
    return np.repeat(one[None], max(n, 1), axis=0)


def _decoded(path: str, mode: str, size: Any) -> Any:
    """The image at ``path`` in ``mode``, resized to ``size`` (w, h); the file's own size is
    checked from its header before anything is decoded."""
    import warnings

    try:
        from PIL import Image
    except ImportError:
        raise ValueError(
            "reading images needs Pillow (pip install pillow); or give a .npy"
        ) from None
    too_big = (
        "image %s has more than %d megapixels; edgebench decodes at most that many (Pillow's "
        "decompression-bomb limit): shrink it first" % (path, MAX_DECODED_PIXELS // 1000000)
    )
    try:
        with warnings.catch_warnings():
            # The check below says it in edgebench's words.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(path)
        with image:
            width, height = image.size
            if width * height > MAX_DECODED_PIXELS:
                raise ValueError(too_big)
            check_fits_memory("decoding image %s" % path, width * height * 8)
            # Not the typed Image.Resampling: Pillow 9.1+, newer than some devices have.
            return image.convert(mode).resize(size, Image.BILINEAR)  # type: ignore[attr-defined]  # set by setattr
    except Image.DecompressionBombError:
        raise ValueError(too_big) from None
    except (OSError, SyntaxError, EOFError) as exc:
        # Pillow reports some damaged files as SyntaxError ("broken PNG file").
        raise ValueError("cannot read image %s: %s" % (path, exc)) from None


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
    return c_order(array, wanted)


def fit_sample(arrays: Dict[str, Any], specs: List[InputSpec], label: str) -> Dict[str, Any]:
    """Arrays by name (or one unnamed array for a one-input model) as the model's inputs
    want them; ValueError says what does not fit. ``label`` names where they came from."""
    if not specs:
        return {k: c_order(v) for k, v in arrays.items() if k}
    by_name = {s.name: s for s in specs}
    if set(by_name) <= set(arrays):
        return {n: _fit(n, arrays[n], s) for n, s in by_name.items()}
    if len(specs) == 1 and len(arrays) == 1:
        ((key, array),) = arrays.items()
        return {specs[0].name: _fit(key or label, array, specs[0])}
    why = "%s has arrays %s; the model's inputs are %s" % (label, sorted(arrays), sorted(by_name))
    raise ValueError(why + " (an .npz needs one array per input name)")


def load_array_file(path: str) -> Dict[str, Any]:
    """The arrays of an .npy (one, named "") or an .npz (by name). ValueError, without the
    path, when the file is not a numpy array file: never numpy's advice to unpickle it."""
    import numpy as np

    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
    except OSError as exc:
        raise ValueError("cannot read it: %s" % (exc.strerror or exc)) from None
    if magic != b"\x93NUMPY" and not magic.startswith(b"PK"):
        raise ValueError(
            "not a numpy array file; save arrays with numpy.save (.npy) or numpy.savez (.npz)"
        )
    try:
        loaded = np.load(path, allow_pickle=False)
        if isinstance(loaded, np.ndarray):
            return {"": loaded}
        with loaded:
            return {k: loaded[k] for k in loaded.files}
    except ValueError as exc:
        if "pickle" in str(exc):  # an object array: numpy would suggest unpickling it
            raise ValueError(
                "holds Python objects, not numeric arrays; save numeric arrays only"
            ) from None
        raise ValueError("a damaged numpy array file (%s)" % exc) from None
    except Exception as exc:  # zipfile, zlib and EOF errors of a cut or damaged file
        reason = str(exc) or type(exc).__name__
        raise ValueError("a damaged numpy array file (%s)" % reason) from None


def nonfinite_array(arrays: Dict[str, Any]) -> Optional[str]:
    """The name of the first floating-point array holding NaN or Inf, else None."""
    import numpy as np

    for name, array in arrays.items():
        if array.dtype.kind in "fc" and not np.isfinite(array).all():
            return name
    return None


def nonfinite_message(name: str) -> str:
    where = " (array %s)" % name if name else ""
    return (
        "holds NaN or Inf values%s; outputs computed from them cannot be compared, so give "
        "finite numbers" % where
    )


def read_input_file(
    path: str, specs: List[InputSpec], preprocess: Optional[str] = None
) -> Dict[str, Any]:
    """The tensors of an input file for ``specs``: an ``.npz`` (one array per input name, or
    one array for a one-input model), an ``.npy`` or an image (one-input models), the latter
    through ``--preprocess``. ValueError says what does not fit."""
    lower = path.lower()
    if lower.endswith(".npz") or lower.endswith(".npy"):
        if preprocess:
            raise ValueError("--preprocess applies to images; .npy and .npz are fed as they are")
        try:
            arrays = load_array_file(path)
        except ValueError as exc:
            raise ValueError("%s: %s" % (path, exc)) from None
        bad = nonfinite_array(arrays)
        if bad is not None:
            raise ValueError("%s: %s" % (path, nonfinite_message(bad)))
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
