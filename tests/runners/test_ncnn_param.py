"""Which layers of an ncnn .param run in int8 (runners/protocol/ncnn_param.py): the switch each
int8 layer type turns on, as ncnn's layer sources read it."""

from __future__ import annotations

from pathlib import Path

from edgebench.runners.protocol.ncnn_param import int8_layers

PARAM = """7767517
8 9
Input            in0      0 1 in0
Convolution      conv_0   1 1 in0 c0 0=8 1=3 6=216 8=102
ConvolutionDepthWise dw_0 1 1 c0 d0 0=8 1=3 6=72 7=8 8=1
Convolution      conv_1   1 1 d0 c1 0=8 1=1 6=64 8=0
InnerProduct     fc_0     1 1 c1 f0 0=10 2=80
Gemm             gemm_0   1 1 f0 g0 10=-1 18=2
Pooling          pool_0   1 1 g0 p0 0=1 8=1
LSTM             lstm_0   1 1 p0 l0 0=4 1=64 8=2.0
"""


def test_the_int8_switch_of_each_layer_type_is_read(tmp_path: Path) -> None:
    param = tmp_path / "model.param"
    param.write_text(PARAM)
    # conv_1 (8=0) and fc_0 (no 8=) are float; Pooling has no int8 switch, whatever 8= means.
    assert int8_layers(str(param)) == [
        "Convolution conv_0",
        "ConvolutionDepthWise dw_0",
        "Gemm gemm_0",
        "LSTM lstm_0",
    ]


def test_a_float_model_or_no_text_param_has_no_int8_layers(tmp_path: Path) -> None:
    float_param = tmp_path / "float.param"
    float_param.write_text("7767517\n2 2\nInput in0 0 1 in0\nConvolution c 1 1 in0 y 0=8 6=216\n")
    binary = tmp_path / "binary.param"
    binary.write_bytes(bytes(range(256)))
    assert int8_layers(str(float_param)) == []
    assert int8_layers(str(binary)) == []
    assert int8_layers(str(tmp_path / "missing.param")) == []
