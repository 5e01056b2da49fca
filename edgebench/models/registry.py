"""The table of built-in generated benchmark models."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import onnx

from edgebench.models import detector, mobilenetv2, resnet, vit


class UnknownModelError(ValueError):
    """Raised for a name that is not a built-in model."""


@dataclass(frozen=True)
class BuiltinModel:
    name: str
    description: str  # one line
    input_shape: tuple[int, ...]
    build: Callable[[int], onnx.ModelProto]  # seed -> model
    #: The input axes the architecture takes at any size (``dynamic.relax_inputs`` makes them
    #: symbolic): convolutional nets take any batch and image size, the ViT none (its
    #: position embedding fixes 224x224, its class token the batch of 1).
    free_axes: tuple[int, ...] = ()


BUILTIN_MODELS: dict[str, BuiltinModel] = {
    m.name: m
    for m in (
        BuiltinModel(
            "mobilenetv2",
            "MobileNetV2 1.0 ImageNet classifier, 224x224 (~3.5M params, ~300M MACs)",
            mobilenetv2.INPUT_SHAPE,
            mobilenetv2.build_mobilenetv2,
            free_axes=(0, 2, 3),
        ),
        BuiltinModel(
            "resnet50",
            "ResNet-50 v1.5 ImageNet classifier, 224x224 (~25.6M params, ~4.1G MACs)",
            resnet.INPUT_SHAPE,
            resnet.build_resnet50,
            free_axes=(0, 2, 3),
        ),
        BuiltinModel(
            "vit-tiny",
            "DeiT-Tiny vision transformer, patch 16, 224x224 (~5.7M params, ~1.26G MACs)",
            vit.INPUT_SHAPE,
            vit.build_vit_tiny,
        ),
        BuiltinModel(
            "detector",
            "MobileNetV2 + PAN-lite single-stage detector, 320x320, 80 classes, no NMS",
            detector.INPUT_SHAPE,
            detector.build_detector,
            # Height and width in multiples of 32: the neck concatenates 2x up-sampled maps.
            free_axes=(0, 2, 3),
        ),
    )
}


def get_builtin(name: str) -> BuiltinModel:
    try:
        return BUILTIN_MODELS[name]
    except KeyError:
        known = ", ".join(BUILTIN_MODELS)
        raise UnknownModelError(f"unknown built-in model {name!r}; known models: {known}") from None


def build_model(name: str, seed: int = 0) -> onnx.ModelProto:
    """Generate built-in model ``name`` with weights drawn from ``seed``."""
    return get_builtin(name).build(seed)
