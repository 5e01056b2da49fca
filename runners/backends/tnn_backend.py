"""TNN: no Python runtime, so no backend; the runner reports why. TNN cells run through
edgebench-native built with TNN (runners/native_runner/backends/tnn.cpp; runner = "auto" picks
it for TNN where such a build is there), or through the TNNTest binary (a framework tool:
edgebench/framework_tools/tnn_test.py) on devices with one."""

FRAMEWORK = "tnn"
PIP_EXTRA = None  # no edgebench extra installs it
NATIVE_ONLY = (
    'TNN has no Python runtime; measure it with runner = "edgebench-native" or "auto" '
    '(`edgebench runners build --framework tnn`), or "framework-tools" (TNNTest)'
)
