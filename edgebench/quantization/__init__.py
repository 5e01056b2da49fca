"""Quantized precisions: the calibration and evaluation sets every framework shares, and the
accuracy a quantized cell keeps against fp32 ONNX Runtime (docs/quantization.md)."""

#: Precisions whose cells are judged by their accuracy on the evaluation set (with the
#: ``AccuracyRule``) instead of the element-wise output check.
QUANTIZED_PRECISIONS = ("int8", "int8-weights")
