"""What a generative model folder says about itself, agreed by the converters that write it,
the runners that load it and the host's tools that run it.

edgebench's converters write ``edgebench_weights.json`` beside the model (``{"weight_type":
what runs, "form": how the matrices are held}``); a folder the runtime's own tools wrote has
none, and its weight type is then the runtime's own name for such a folder.
"""

import json
import os

#: The weight types edgebench writes generative folders at (GGUF's names).
FOLDER_WEIGHT_TYPES = ("f32", "f16", "q8_0", "q4_0")
#: What edgebench's converters write beside the model.
WEIGHTS_FILE = "edgebench_weights.json"
#: MNN-LLM: the engine's configuration file in the folder, and the weight type of a folder
#: edgebench did not write (MNN's llmexport's).
MNN_LLM_CONFIG_FILE = "config.json"
MNN_LLM_OWN_FOLDER = "mnn-llm-model"


def read_weight_type(folder: str, own: str) -> str:
    """The weight type edgebench's converter recorded in ``folder``, else ``own`` (a folder
    the runtime's own tools wrote)."""
    try:
        with open(os.path.join(folder, WEIGHTS_FILE)) as handle:
            return str(json.load(handle)["weight_type"])
    except (OSError, ValueError, KeyError, TypeError):
        return own
