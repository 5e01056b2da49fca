"""TNN: no Python runtime, so no backend; the runner reports why, and TNN cells run through the
TNNTest binary (a framework tool: edgebench/framework_tools/tnn_test.py) on devices with one."""

FRAMEWORK = "tnn"
PIP_EXTRA = None  # no edgebench extra installs it
NATIVE_ONLY = (
    "TNN has no Python runtime; it runs through its native TNNTest binary on devices that have one"
)
