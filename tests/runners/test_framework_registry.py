"""The frameworks registry (edgebench/frameworks/) and the runner's backend discovery.

Adding a framework is one registry entry plus one backend file: the test below adds a
numpy-only framework that way and measures it through the host's own planning and scheduling.
"""

from __future__ import annotations

import tomllib

import pytest
from fakes.dummy_framework import dummy_framework_cell
from fakes.environment import REPO

from edgebench import frameworks
from edgebench.frameworks import FRAMEWORKS, framework_names, install_hint
from edgebench.lab.device import LocalDevice
from edgebench.lab.runner_tree import DEVICE_PACKAGE, write_runner_tree
from edgebench.measure.scheduler import run_cell
from edgebench.planning.config import TimingConfig
from edgebench.runners.backends import discover
from edgebench.runners.protocol.errors import BackendError

# A whole framework: y = 2 * x, with numpy as the "framework module".
DUMMY_BACKEND = '''
"""A numpy-only framework for the registry test: y = 2 * x."""

from .base import Backend, InputSpec, check_precision

FRAMEWORK = "dummy"
REQUIRES = ("numpy",)


class DummyBackend(Backend):
    name = FRAMEWORK

    def version(self):
        return "0.1"

    def load(self, model_path, threads, precision, options):
        check_precision(self, precision)

    def model_inputs(self):
        return [InputSpec("x", [1, 16], "float32")]

    def output_names(self):
        return ["y"]

    def make_stream(self, feeds):
        x = feeds["x"]
        return lambda: [x * 2]


BACKEND = DummyBackend
'''


def test_a_framework_is_one_registry_entry_plus_one_backend_file(tmp_path, monkeypatch):
    timing = TimingConfig(warmup=2, iterations=20, min_time_s=0.0)
    cell, device = dummy_framework_cell(tmp_path, monkeypatch, "dummy", DUMMY_BACKEND, timing)
    assert cell.verdict is None and cell.convert_to is None  # runs the ONNX file itself

    record = run_cell("registry-test", cell, device)
    assert record.status == "ok", record.error
    assert record.framework == "dummy" and record.framework_version == "0.1"
    assert len(record.samples_ns) >= 20
    assert record.output_check.passed  # against ONNX Runtime, like every framework


def test_registry_and_backend_files_agree():
    found, broken = discover()
    assert broken == {}
    assert sorted(found) == sorted(framework_names())
    for framework in FRAMEWORKS:
        assert found[framework.name].module == framework.backend
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for framework in FRAMEWORKS:
        if framework.native_only:
            assert framework.pip_extra is None and not framework.modules
        elif framework.reference:  # numpy's: a dependency of edgebench itself
            assert framework.pip_extra is None and framework.modules == ("numpy",)
        elif framework.pip_extra is None:  # no install makes it run: its device check says why
            with pytest.raises(BackendError) as refused:
                framework.declaration.device_check()
            assert refused.value.kind == "unsupported", framework.name
        else:
            assert framework.pip_extra in extras, framework.name
            assert framework.modules, framework.name


def test_hints_and_defaults():
    assert install_hint("mnn") == "pip install 'edgebench[mnn]'"
    assert install_hint("tflite") == "pip install 'edgebench[tflite]'"
    assert "TNNTest" in install_hint("tnn")
    assert frameworks.find_framework("tflite").modules == ("ai_edge_litert", "tflite_runtime")
    assert frameworks.python_frameworks() == [
        "onnxruntime",
        "mnn",
        "ncnn",
        "tflite",
        "openvino",
        "tensorrt",
        "reference-llm",
        "llama.cpp",
        "onnxruntime-genai",
        "openvino-genai",
        "mnn-llm",
        "litert-lm",
        "executorch",
    ]
    # A run that names no frameworks leaves the references out.
    assert "reference-llm" not in frameworks.default_frameworks()
    assert frameworks.framework_for_format("ncnn").name == "ncnn"
    assert frameworks.framework_for_format("onnx") is None


def test_a_missing_framework_names_its_pip_extra(tmp_path):
    entry = write_runner_tree(tmp_path / "runner")
    (entry.parent / DEVICE_PACKAGE / "backends" / "absent_backend.py").write_text(
        'FRAMEWORK = "absent"\nREQUIRES = ("no_such_module_xyz",)\nPIP_EXTRA = "absent-extra"\n'
        "BACKEND = object\n"
    )
    device = LocalDevice()
    device.runner_path = str(entry)
    facts = device.facts().frameworks
    assert facts["absent"]["reason"] == "not_installed"
    assert "pip install 'edgebench[absent-extra]'" in facts["absent"]["message"]
    assert facts["onnxruntime"]["available"] is True
    assert facts["tnn"]["reason"] == "unsupported"
