"""What each converter toolchain installs: pinned pip requirements, its executables and the
smoke test that proves an install works. ``toolchains`` builds and queries the venvs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ToolchainSpec:
    name: str
    description: str
    #: pip requirement strings, installed in one ``pip install`` call.
    requirements: tuple[str, ...]
    #: Distribution whose version names the toolchain (``pnnx-20261020``).
    main_package: str
    #: ``pip install --no-deps``: the exact list above and nothing else.
    no_deps: bool = False
    #: Executables by name, relative to the venv; ``{site}`` is its site-packages.
    executables: tuple[tuple[str, str], ...] = ()
    #: Run after install: executable name and arguments; its output must contain smoke_expect.
    smoke: tuple[str, ...] = ()
    smoke_expect: str = ""
    #: Installed by a plain ``edgebench toolchains install``: a default route needs it.
    default: bool = True


# onnx2tf 1.29.24 pins its direct dependencies exactly; the rest are the versions its resolver
# picked on 2026-11-30 (x86_64, Python 3.11), pinned so every install gets the same set.
_ONNX2TF_REQUIREMENTS = (
    "onnx2tf==1.29.24",
    "tensorflow==2.19.0",
    "tf-keras==2.19.0",
    "keras==3.15.1",
    "numpy==1.26.4",
    "onnx==1.19.1",
    "onnxruntime==1.23.0",
    "onnxsim==0.4.36",
    "onnxoptimizer==0.4.2",
    "onnx-graphsurgeon==0.5.8",
    "simple-onnx-processing-tools==1.1.32",
    "sng4onnx==2.0.1",
    "sne4onnx==2.0.1",
    "ai-edge-litert==2.1.0",
    "protobuf==4.25.5",
    "ml-dtypes==0.5.1",
    "h5py==3.11.0",
    "flatbuffers==25.12.19",
    "psutil==5.9.5",
    "opencv-python==4.11.0.86",
    "requests==2.32.5",
)

TOOLCHAINS: dict[str, ToolchainSpec] = {
    spec.name: spec
    for spec in (
        ToolchainSpec(
            name="ncnn",
            description="pnnx: ONNX -> ncnn (native binary; torch not installed)",
            requirements=("pnnx==20261020",),
            main_package="pnnx",
            no_deps=True,
            executables=(("pnnx", "{site}/pnnx/pnnx"),),
            smoke=("pnnx",),
            smoke_expect="Usage: pnnx",
        ),
        ToolchainSpec(
            name="tflite",
            description="onnx2tf: ONNX -> TFLite (TensorFlow 2.19), for --tflite-converter onnx2tf",
            requirements=_ONNX2TF_REQUIREMENTS,
            main_package="onnx2tf",
            executables=(("onnx2tf", "bin/onnx2tf"), ("onnxsim", "bin/onnxsim")),
            smoke=("onnx2tf", "-V"),
            smoke_expect="1.29.24",
            default=False,  # only --tflite-converter onnx2tf uses it
        ),
    )
}
