"""A toy framework, added as this one folder and nothing else (tests/framework_tools/
test_toy_framework.py lists it through EDGEBENCH_FRAMEWORKS_PATH): its own artifact format
(a copy of the ONNX file), a benchmark tool that prints one summary line, and a DSP backend."""

from edgebench.frameworks.rows import ComputeBackend, ConverterRow, Framework

FRAMEWORK = Framework(
    "toy",
    order=900,
    artifact_format="toy",
    converter="toy",
    artifact_suffixes=(".toy", None),
    converters=(ConverterRow("toy", "edgebench.frameworks.toy.convert:ToyConverter"),),
    tool="edgebench.frameworks.toy.tool:ToyBenchAdapter",
    accelerators=(
        ComputeBackend(
            "toy",
            "dsp",
            "ToyDSP",
            python=None,
            edgebench_native=None,
            tool="toybench --dsp",
            provides="the toy DSP",
            tool_arg="--dsp",
        ),
    ),
)
