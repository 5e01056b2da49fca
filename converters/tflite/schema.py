"""The .tflite flatbuffer schema as Python classes, from the ai-edge-litert wheel.

ai-edge-litert ships ``schema_py_generated`` with the full object API (``ModelT`` ... ``Pack``);
edgebench builds its models with it and writes the bytes with ``flatbuffers`` itself.
"""

from __future__ import annotations

from types import ModuleType

INSTALL_HINT = "pip install 'edgebench[tflite]' (ai-edge-litert ships the .tflite schema)"


def load_schema() -> ModuleType:
    """The generated schema module; ImportError names the package to install."""
    try:
        from ai_edge_litert import schema_py_generated
    except ImportError as exc:
        raise ImportError(f"the .tflite schema is missing: {INSTALL_HINT}") from exc
    return schema_py_generated


def schema_missing() -> str | None:
    try:
        load_schema()
        import flatbuffers  # noqa: F401
    except ImportError:
        return f"TFLite writer unavailable: {INSTALL_HINT}"
    return None
