"""LiteRT-LM (the ``litert-lm-api`` package: ``litert_lm`` and ``liblitert-lm.so``): declared so
that its cells say in one line why edgebench cannot measure it.

LiteRT-LM runs ``.litertlm`` bundles that ``litert-lm-builder`` packs from a LiteRT model of the
decoder, and that model is exported from PyTorch with litert-torch: nothing makes one from a
GGUF without torch, which edgebench's install leaves out. A ``.litertlm`` file a user made is not
accepted yet either. So the runner reports the framework ``unsupported`` with ``WHY_NOT`` before
importing it, and there is no edgebench extra to install.
"""

from __future__ import annotations

from .not_yet import NotYetBackend, refusal

FRAMEWORK = "litert-lm"
REQUIRES = ("litert_lm",)
PIP_EXTRA = None  # installing the runtime would not help (WHY_NOT)

WHY_NOT = (
    "litert-lm runs .litertlm files that litert-lm-builder packs from a LiteRT model exported "
    "with litert-torch (torch), so none can be made from a GGUF here; a .litertlm file of your "
    "own is not accepted yet"
)
DEVICE_CHECK = refusal(WHY_NOT)
BACKEND = NotYetBackend
