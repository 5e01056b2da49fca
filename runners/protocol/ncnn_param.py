"""What an ncnn ``.param`` says about its layers: which of them run in int8.

Read by the ncnn backend on the device and by the host when a pre-converted model is planned
(``edgebench.planning.model_precision``). Python 3.8, stdlib only.

An int8 ncnn model (``ncnn2int8``, or edgebench's own writer) keeps its layer types and turns
one param on in each quantized layer: ``int8_scale_term`` (id 8 for Convolution,
ConvolutionDepthWise, InnerProduct, RNN, LSTM and GRU; id 18 for Embed and SDPA) or
``quantize_term`` (id 18 for Gemm and MultiHeadAttention), as ncnn's ``src/layer/*.cpp`` read
them. Such a layer's weights are stored as int8 in the ``.bin``, and ncnn reads them right only
with int8 inference on.
"""

from typing import List

PARAM_MAGIC = "7767517"
#: Layer type -> the param id whose non-zero value makes the layer int8.
INT8_SWITCH = {
    "Convolution": 8,
    "ConvolutionDepthWise": 8,
    "InnerProduct": 8,
    "RNN": 8,
    "LSTM": 8,
    "GRU": 8,
    "Embed": 18,
    "SDPA": 18,
    "Gemm": 18,
    "MultiHeadAttention": 18,
}


def int8_layers(param_path: str) -> List[str]:
    """``"Type name"`` of each int8 layer, in file order; [] for a float model, or for a file
    that is not a text ``.param`` (ncnn itself says what is wrong with that one)."""
    try:
        with open(param_path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    if not lines or lines[0].strip() != PARAM_MAGIC:
        return []
    found = []
    for line in lines[2:]:
        fields = line.split()
        switch = INT8_SWITCH.get(fields[0]) if len(fields) >= 4 else None
        if switch is None:
            continue
        try:
            first_param = 4 + int(fields[2]) + int(fields[3])
        except ValueError:
            continue
        for token in fields[first_param:]:
            key, _, value = token.partition("=")
            if key == str(switch) and _nonzero(value):
                found.append("%s %s" % (fields[0], fields[1]))
                break
    return found


def _nonzero(value: str) -> bool:
    try:
        return float(value) != 0
    except ValueError:
        return False
