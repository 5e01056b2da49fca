"""The interface every ONNX -> target-format converter implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import onnx


class ConversionError(Exception):
    """A conversion that did not produce a usable artifact.

    ``kind`` is one of: ``unsupported_op`` (the message names the op type and the node),
    ``toolchain_missing`` (the message gives the install command), ``failed``.
    """

    def __init__(self, kind: str, message: str, log: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.log = log


def unsupported_op(op_type: str, node_name: str, target: str) -> ConversionError:
    """The one-line error for an operator a converter cannot translate."""
    return ConversionError(
        "unsupported_op",
        f"{target} converter does not support operator {op_type} (node {node_name!r})",
    )


def read_onnx(path: Path, weights: bool = True) -> onnx.ModelProto:
    """The ONNX model at ``path`` (``weights=False``: without external weight files); a file
    that is not one is a "failed" conversion."""
    try:
        return onnx.load(str(path), load_external_data=weights)
    except Exception as exc:  # protobuf raises DecodeError, onnx its own types
        raise ConversionError("failed", f"cannot read ONNX model {path}: {exc}") from exc


def symbolic_input_axes(model: onnx.ModelProto) -> dict[str, list[int]]:
    """The axes of each graph input (initializers aside) that the model does not fix: a
    ``dim_param`` or no size at all."""
    initializers = {init.name for init in model.graph.initializer}
    found: dict[str, list[int]] = {}
    for value in model.graph.input:
        dims = value.type.tensor_type.shape.dim
        free = [i for i, d in enumerate(dims) if not d.HasField("dim_value") or d.dim_value <= 0]
        if free and value.name not in initializers:
            found[value.name] = free
    return found


#: Precisions whose conversion reads a calibration set (full integer: weights and activations).
CALIBRATED_PRECISIONS = ("int8",)


@dataclass(frozen=True)
class ConversionOptions:
    """What changes the converted bytes, and therefore belongs in the cache key."""

    precision: str = "fp32"
    # Concrete input shapes by input name (NCHW as in the ONNX model).
    input_shapes: dict[str, list[int]] = field(default_factory=dict)
    #: int8: the calibration set, an .npz with one array per ONNX input name whose leading axis
    #: stacks the samples ([N, *input shape]); ``calibration_data.load_calibration`` reads it.
    calibration: Path | None = None
    #: The set's sha256: the artifact depends on the data, not on where the file is.
    calibration_sha256: str | None = None
    #: Keep the model's symbolic input dims, for an artifact the runner resizes at run time
    #: (converters whose ``dynamic_shapes`` is False refuse). ``input_shapes`` then holds a
    #: representative shape, for tools that insist on one (pnnx).
    dynamic: bool = False

    def key_fields(self) -> dict[str, object]:
        fields: dict[str, object] = {
            "precision": self.precision,
            "input_shapes": {k: list(v) for k, v in sorted(self.input_shapes.items())},
        }
        # Only a precision that calibrates depends on the set: int8-weights, which does not
        # read it, reuses its artifact whatever --calibration is.
        if self.calibration_sha256 and self.precision in CALIBRATED_PRECISIONS:
            fields["calibration"] = self.calibration_sha256
        if self.dynamic:  # only when set: fixed conversions keep the keys they always had
            fields["dynamic"] = True
        return fields


class Converter(ABC):
    """ONNX file in, a folder of artifact files out."""

    #: Artifact format name used on the command line (``--to``).
    format = ""
    #: Runner framework that executes the artifact (None: no runner backend, e.g. TNN).
    framework: str | None = None
    #: Precisions the target format can be produced in.
    precisions: tuple[str, ...] = ("fp32",)
    #: Why a precision outside ``precisions`` cannot be produced, where there is more to say.
    precision_notes: ClassVar[dict[str, str]] = {
        "int8-weights": "weight-only int8 is made for MNN only (MNNConvert --weightQuantBits 8); "
        "use int8 for full integer quantization",
    }
    #: Whether ``ConversionOptions.dynamic`` gives an artifact the runner can resize.
    dynamic_shapes: ClassVar[bool] = False
    #: One line: why a dynamic artifact cannot be made (for refusals and listings).
    dynamic_note: ClassVar[str] = ""
    #: Output of the last successful conversion, kept in the artifact manifest.
    last_log: str = ""
    #: After an int8 conversion: how it was quantized, kept in the manifest as ``quant``:
    #: ``{"method": str, "granularity": str, "fp32_fallback_ops": [op type or name, ...]}``
    #: (the ops left in floating point, each once; empty when every op is quantized).
    last_quant: dict[str, object] | None = None

    @abstractmethod
    def version(self) -> str:
        """Converter version; part of the cache key."""

    def cache_version(self, options: ConversionOptions) -> str:
        """The version the cache keys an artifact made with ``options`` on: ``version()``,
        plus whatever else made it (a quantizer's own version at int8)."""
        return self.version()

    @abstractmethod
    def unavailable_reason(self) -> str | None:
        """None when the converter can run here, else one line with the fix."""

    def check_dynamic(self, onnx_path: Path, options: ConversionOptions) -> dict[str, list[int]]:
        """With ``options.dynamic``: the model's symbolic input axes by input name (``{}``
        without it). Raises a "failed" ConversionError when no dynamic artifact can be made:
        the format has none (``dynamic_note`` says why), the precision is calibrated at fixed
        shapes, or the model has no symbolic input dim to keep."""
        if not options.dynamic:
            return {}
        if not self.dynamic_shapes:
            raise ConversionError(
                "failed",
                f"{self.format} has no dynamic-shape artifact: {self.dynamic_note or 'unsupported'}"
                "; convert one fixed artifact per shape instead",
            )
        if options.precision in CALIBRATED_PRECISIONS:
            raise ConversionError(
                "failed",
                f"{self.format} {options.precision} is calibrated at fixed input shapes, so it "
                "has no dynamic-shape artifact; convert one fixed artifact per shape instead",
            )
        axes = symbolic_input_axes(read_onnx(onnx_path, weights=False))
        if not axes:
            raise ConversionError(
                "failed",
                f"a dynamic {self.format} artifact needs a model with symbolic input dims, and "
                f"{Path(onnx_path).name} has none "
                "(edgebench.models.dynamic.relax_inputs makes them)",
            )
        return axes

    @abstractmethod
    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        """Write the artifact into the empty ``out_dir``.

        Returns the file names written (relative to ``out_dir``), primary file first
        (e.g. ``model.param`` before ``model.bin``). Raises ConversionError.
        Everything the converter prints belongs in the error's ``log``, never on stdout.
        """
