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
- Q4_0: the file's own blocks, bit for bit, in MNN's symmetric 4-bit block-32 form
  (q4_blocks.py: MNN's own 4-bit quantization of the values would move them onto another grid
  and compute another model); the head's blocks serve the embedding lookup too where tied.

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
from edgebench.runners.protocol.model_folders import WEIGHTS_FILE

from ..ort_genai.converter import read_source
from ..subprocess_tools import scratch_dir
from .decoder import decoder_model
from .folder import MODEL_FILE, WEIGHT_FILE, write_folder_files
from .q4_blocks import FIRST_PASS_FLAGS, write_q4_blocks
from .tool import mnnconvert

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
    "q4_0": (
        "q4_0",
        "Q4_0's blocks as stored (4-bit codes, one scale per 32) in MNN's symmetric 4-bit form",
        FIRST_PASS_FLAGS,
    ),
}
#: mnnconvert's flags for every weight type: MNN-LLM's attention, the weights in their own file.
FUSED_EXTERNAL = ["--bizCode", "edgebench", "--transformerFuse", "--saveExternalData"]
#: Where the ONNX graph's weights go when it would pass protobuf's 2 GB.
ONNX_DATA = "llm.onnx.data"
EXTERNAL_OVER = 1 << 30


class MnnLlmConverter(Converter):
    format = "mnn-llm"
    framework = "mnn-llm"
    precisions = tuple(WEIGHT_FORMS)
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
        try:
            model = decoder_model(gguf, shape)
        except (GgufError, ModelError, KeyError) as exc:
            raise ConversionError("failed", f"{name}: {exc}") from None
        out_dir = Path(out_dir)
        ran, form, flags = WEIGHT_FORMS[stored]
        tie = None
        with scratch_dir(out_dir.resolve(), "mnn-llm") as work:
            graph = work / "llm.onnx"
            external = sum(len(t.raw_data) for t in model.graph.initializer) > EXTERNAL_OVER
            onnx.save_model(model, str(graph), save_as_external_data=external, location=ONNX_DATA)
            del model
            target = ["--MNNModel", str(out_dir / MODEL_FILE), *FUSED_EXTERNAL, *flags]
            args = ["-f", "ONNX", "--modelFile", str(graph), *target]
            self.last_log = mnnconvert(args, out_dir, out_dir / WEIGHT_FILE, self.timeout_s)
            fused = self.last_log.count("Fuse Attention")
            if fused != shape.layers:
                raise ConversionError(
                    "failed",
                    f"mnnconvert fused {fused} of {shape.layers} attention layers into "
                    "MNN-LLM's cached attention",
                    self.last_log,
                )
            if stored == "q4_0":
                tie, log = write_q4_blocks(gguf, shape, out_dir, work, self.timeout_s)
                self.last_log += "\n" + log
        written = write_folder_files(gguf, shape, out_dir, tie)
        (out_dir / WEIGHTS_FILE).write_text(json.dumps({"weight_type": ran, "form": form}))
        return [MODEL_FILE, WEIGHT_FILE, *written, WEIGHTS_FILE]
