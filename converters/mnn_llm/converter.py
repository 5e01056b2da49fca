"""GGUF -> an MNN-LLM model folder (``llm.mnn``, ``llm.mnn.weight``, ``config.json``,
``llm_config.json``, ``embeddings_f16.bin``, ``tokenizer.txt``), written without torch.

MNN's own route is ``llmexport.py``, which traces a Hugging Face model with torch (its
``gguf2mnn.py`` only swaps GGUF weights into a folder that export made). edgebench writes the
decoder as an ONNX graph in the form MNN's converter fuses into MNN-LLM's attention with its own
key/value cache (decoder.py), then runs that converter (the mnn wheel's ``_tools``, in an
isolated subprocess as for tensor models) with the flags llmexport uses: ``--transformerFuse``
and ``--saveExternalData`` (the weights in ``llm.mnn.weight``), plus the weight form:

- F16: ``--fp16`` (weights stored as float16, as in the file);
- F32: float32;
- Q8_0: the values the file stores, quantized again by MNN's own weight quantization
  (``--weightQuantBits 8 --weightQuantBlock 32``, symmetric): MNN's nearest form, not GGUF's
  blocks bit for bit, and recorded as such;
- Q4_0: refused (``Q4_0_REFUSAL``). The same at 4 bits (block 32 or 64, symmetric or not)
  computes something else: first-step logits at cosine 0.4-0.6 with reference-llm's on
  llm-tiny q4_0, where the same graph converted in float reaches 0.99996.

What ran is written beside the model (``edgebench_weights.json``) for the runner to record.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from pathlib import Path
from typing import ClassVar

import onnx

from edgebench.converters.base import ConversionError, ConversionOptions, Converter
from edgebench.runners.protocol.gguf import GgufError
from edgebench.runners.protocol.llm_shape import ModelError

from ..isolation import convert_in_python_subprocess
from ..ort_genai.converter import read_source
from ..subprocess_tools import scratch_dir
from .decoder import decoder_model
from .folder import MODEL_FILE, WEIGHT_FILE, write_folder_files

#: {"weight_type": what the runner records, "form": how the matrices are held}.
WEIGHTS_FILE = "edgebench_weights.json"
#: Architectures whose decoder this graph computes.
ARCHITECTURES = ("qwen2", "llama")
#: The GGUF weight type -> (the weight type that runs, its form, mnnconvert's weight flags).
WEIGHT_FORMS: dict[str, tuple[str, str, list[str]]] = {
    "f32": ("f32", "float32 weights", []),
    "f16": ("f16", "float16 weights (mnnconvert --fp16)", ["--fp16"]),
    "q8_0": (
        "mnn-int8-block32",
        "MNN weight quantization, 8-bit, block 32, symmetric, of the Q8_0 values",
        ["--weightQuantBits", "8", "--weightQuantBlock", "32", "--weightQuantAsymmetric=0"],
    ),
}
Q4_0_REFUSAL = (
    "MNN's 4-bit weight quantization of a Q4_0 file's values does not compute the model "
    "(first-step logits at cosine ~0.5 with reference-llm's); run q4_0 on another runtime"
)
#: Where the ONNX graph's weights go when it would pass protobuf's 2 GB.
ONNX_DATA = "llm.onnx.data"
EXTERNAL_OVER = 1 << 30

# Not MNN.tools (importing it runs pip and uploads usage logs): the _tools extension itself.
_SCRIPT = """
import sys
import _tools
args = ["mnnconvert", "-f", "ONNX", "--modelFile", sys.argv[1], "--MNNModel", sys.argv[2],
        "--bizCode", "edgebench", "--transformerFuse", "--saveExternalData", *sys.argv[3:]]
ok = _tools.mnnconvert(args)
sys.exit(0 if ok in (0, True) else 3)
"""


class MnnLlmConverter(Converter):
    format = "mnn-llm"
    framework = "mnn-llm"
    precisions = (*WEIGHT_FORMS, "q4_0")  # q4_0: refused with its reason
    dynamic_note: ClassVar[str] = "the decoder's sequence dims are always symbolic"
    timeout_s = 1800.0

    def version(self) -> str:
        # Bump the first part whenever the bytes written for the same input change.
        try:
            return "edgebench-mnn-llm-1+mnn-" + importlib.metadata.version("mnn")
        except importlib.metadata.PackageNotFoundError:
            return "edgebench-mnn-llm-1+mnn-missing"

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("_tools") is None:
            return "the MNN-LLM converter needs the mnn package: pip install 'edgebench[mnn]'"
        return None

    def convert(self, onnx_path: Path, out_dir: Path, options: ConversionOptions) -> list[str]:
        """``onnx_path`` is the GGUF file (the generative cells' source model)."""
        name = Path(onnx_path).name
        gguf, shape, stored = read_source(
            Path(onnx_path), "MNN-LLM", ARCHITECTURES, self.precisions, options.precision
        )
        if stored == "q4_0":
            raise ConversionError("unsupported_precision", f"{name}: {Q4_0_REFUSAL}")
        try:
            model = decoder_model(gguf, shape)
        except (GgufError, ModelError, KeyError) as exc:
            raise ConversionError("failed", f"{name}: {exc}") from None
        out_dir = Path(out_dir)
        ran, form, flags = WEIGHT_FORMS[stored]
        with scratch_dir(out_dir.resolve(), "mnn-llm") as work:
            graph = work / "llm.onnx"
            external = sum(len(t.raw_data) for t in model.graph.initializer) > EXTERNAL_OVER
            onnx.save_model(model, str(graph), save_as_external_data=external, location=ONNX_DATA)
            del model
            self.last_log = convert_in_python_subprocess(
                label="mnnconvert",
                script=_SCRIPT,
                args=[str(graph), str(out_dir / MODEL_FILE), *flags],
                out_dir=out_dir,
                expected=out_dir / WEIGHT_FILE,
                timeout=self.timeout_s,
                unsupported_markers=("not support", "unsupported"),
            ).log
        if self.last_log.count("Fuse Attention") != shape.layers:
            raise ConversionError(
                "failed",
                f"mnnconvert fused {self.last_log.count('Fuse Attention')} of {shape.layers} "
                "attention layers into MNN-LLM's cached attention",
                self.last_log,
            )
        written = write_folder_files(gguf, shape, out_dir)
        (out_dir / WEIGHTS_FILE).write_text(json.dumps({"weight_type": ran, "form": form}))
        return [MODEL_FILE, WEIGHT_FILE, *written, WEIGHTS_FILE]
