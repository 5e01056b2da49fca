"""ExecuTorch (the ``executorch`` package and its LLM runner): declared so that its cells say in
one line why edgebench cannot measure it.

ExecuTorch runs ``.pte`` programs that ``torch.export`` and ExecuTorch's lowering write from a
PyTorch model: nothing makes one from a GGUF without torch, which edgebench's install leaves
out. A ``.pte`` file a user exported is not accepted yet either. So the runner reports the
framework ``unsupported`` with ``WHY_NOT`` before importing it, and there is no edgebench extra
to install.
"""

from __future__ import annotations

from .not_yet import NotYetBackend, refusal

FRAMEWORK = "executorch"
REQUIRES = ("executorch",)
PIP_EXTRA = None  # installing the runtime would not help (WHY_NOT)

WHY_NOT = (
    "executorch runs .pte programs that only torch.export writes (torch), so none can be made "
    "from a GGUF here; a .pte file of your own is not accepted yet"
)
DEVICE_CHECK = refusal(WHY_NOT)
BACKEND = NotYetBackend
