"""Backend options are typed (runners/protocol/backend_options.py): read strictly, one line
naming the key for an option a backend does not take or a value of the wrong type, from the spec
reader and from the real runner as its ``bad_spec`` error; written back with the spec's key
names; and each backend module reads the type its host row names."""

from __future__ import annotations

from dataclasses import fields

import pytest
from fakes.runner_process import run_runner

from edgebench.compute_backends import ACCELERATORS, options_type
from edgebench.runners import backends
from edgebench.runners.backends import Backend, discover
from edgebench.runners.protocol import SPEC_SCHEMA
from edgebench.runners.protocol.backend_options import (
    BackendOptions,
    NvidiaOptions,
    OptionsError,
    OrtGpuOptions,
    TensorRTOptions,
)
from edgebench.runners.protocol.errors import BackendError
from edgebench.runners.protocol.spec import RunSpec, SpecError

PROFILE = {"x": {"min": [1, 3, 8, 8], "opt": [2, 3, 8, 8], "max": [4, 3, 8, 8]}}


def spec(framework: str, backend: str, options: object, **extra: object) -> dict:
    return {
        "schema": SPEC_SCHEMA,
        "model": "/m/model.onnx",
        "framework": framework,
        "backend": backend,
        "options": options,
        **extra,
    }


def test_the_options_read_back_typed_and_write_the_same_keys() -> None:
    raw = {"cuda_graph": True, "shape_profile": PROFILE, "engine_cache": False, "workspace_mb": 64}
    options = TensorRTOptions.from_json(raw)
    assert options.cuda_graph is True and options.shape_profile == PROFILE
    assert options.engine_cache is False and options.workspace_mb == 64
    assert options.streams == 1 and options.engine_cache_dir is None
    assert options.to_json() == raw  # defaults left out: the runner fills streams
    assert TensorRTOptions.from_json(options.to_json()) == options
    assert TensorRTOptions().to_json() == {} and OrtGpuOptions().to_json() == {}


def test_shared_fields_are_declared_once() -> None:
    def own(cls: type, base: type) -> set[str]:
        return {f.name for f in fields(cls)} - {f.name for f in fields(base)}

    assert own(NvidiaOptions, BackendOptions) == {"cuda_graph", "shape_profile", "engine_cache_dir"}
    assert own(TensorRTOptions, NvidiaOptions) == {"engine_cache", "workspace_mb"}
    assert own(OrtGpuOptions, NvidiaOptions) == set()


@pytest.mark.parametrize(
    ("framework", "backend", "options", "words"),
    [
        ("tensorrt", "cuda", {"cuda_graphs": True}, "spec option cuda_graphs is not one"),
        ("tensorrt", "cuda", {"cuda_graph": "yes"}, "spec option cuda_graph must be true or false"),
        ("tensorrt", "cuda", {"workspace_mb": 0}, "spec option workspace_mb must be at least 1"),
        ("tensorrt", "cuda", {"engine_cache_dir": 3}, "spec option engine_cache_dir must be"),
        (
            "tensorrt",
            "cuda",
            {"shape_profile": {"x": {"min": [1, "3"]}}},
            r"spec option shape_profile.x.min\[1\] must be an integer",
        ),
        ("onnxruntime", "cuda", {"workspace_mb": 8}, "workspace_mb is not one onnxruntime on cuda"),
        ("onnxruntime", "cpu", {"cuda_graph": True}, "cuda_graph is not one onnxruntime on cpu"),
        ("openvino", "gpu", {"streams": "2"}, "spec option streams must be an integer"),
        ("ncnn", "cpu", {"streams": 0}, "spec option streams must be at least 1"),
    ],
)
def test_the_spec_reader_refuses_a_malformed_option_naming_it(
    framework: str, backend: str, options: dict, words: str
) -> None:
    with pytest.raises(SpecError, match=words):
        RunSpec.from_json(spec(framework, backend, options), backends.options_type)


def test_the_options_of_a_framework_no_module_declares_are_the_loaders_to_refuse() -> None:
    read = RunSpec.from_json(spec("tensorflow-js", "cpu", {"any": 1}), backends.options_type)
    assert read.options == {"any": 1}


def test_a_backend_reading_malformed_options_raises_bad_spec_naming_the_key() -> None:
    backend = Backend()
    backend.name, backend.compute_backend = "tensorrt", "cuda"
    with pytest.raises(BackendError) as caught:
        backend.read_options(TensorRTOptions, {"streams": 2, "cuda_graph": 1})
    assert caught.value.kind == "bad_spec"
    assert caught.value.message.startswith("spec option cuda_graph must be true or false")
    assert backend.read_options(TensorRTOptions, {"streams": 2}).streams == 2


def test_options_that_are_not_an_object_are_refused() -> None:
    with pytest.raises(OptionsError, match="'options' must be an object"):
        BackendOptions.from_json([1])


@pytest.mark.parametrize(
    ("options", "named"),
    [({"cuda_graph": True}, "spec option cuda_graph is not one"), ({"streams": 1.5}, "streams")],
)
def test_the_real_runner_reports_a_malformed_option_as_bad_spec(
    conv_model, options: dict, named: str
) -> None:
    result = run_runner(spec("onnxruntime", "cpu", options, model=str(conv_model)))
    assert result["status"] == "failed"
    assert result["error"]["kind"] == "bad_spec"
    assert named in result["error"]["message"]


def test_a_well_formed_option_still_runs(conv_model) -> None:
    result = run_runner(
        spec("onnxruntime", "cpu", {"streams": 1}, model=str(conv_model), min_time_s=0.0)
    )
    assert result["status"] == "ok", result["error"]


def test_each_backend_module_reads_the_options_type_its_host_row_names() -> None:
    found, broken = discover()
    assert not broken
    checked = 0
    for row in ACCELERATORS:
        declared = found.get(row.framework)
        if declared is None or row.python is None:
            continue
        assert declared.options_type(row.name) is (row.options or BackendOptions), row
        assert options_type(row.framework, row.name) is row.options
        checked += 1
    assert checked >= 3
    assert options_type("tensorrt", "cuda") is TensorRTOptions
    assert options_type("onnxruntime", "cpu") is None  # the CPU rows send no options
