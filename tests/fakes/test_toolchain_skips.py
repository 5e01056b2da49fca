"""The onnx2tf comparisons skip, naming the install command, where its toolchain is absent or
broken; they run where it is installed."""

import json

import pytest

from fakes.toolchains import onnx2tf_or_skip


def test_without_the_onnx2tf_toolchain_the_skip_names_its_install_command(tmp_path, monkeypatch):
    root = tmp_path / "toolchains"
    monkeypatch.setenv("EDGEBENCH_TOOLCHAINS_DIR", str(root))
    with pytest.raises(pytest.skip.Exception) as skipped:
        onnx2tf_or_skip()
    assert "edgebench toolchains install tflite" in str(skipped.value)
    assert not root.exists()  # nothing was installed, not even a folder made


def test_a_broken_onnx2tf_toolchain_skips_with_the_repair_command(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_TOOLCHAINS_DIR", str(tmp_path))
    (tmp_path / "tflite").mkdir()
    state = {"state": "broken", "detail": "install failed: pip exited 1"}
    (tmp_path / "tflite" / "toolchain.json").write_text(json.dumps(state))
    with pytest.raises(pytest.skip.Exception) as skipped:
        onnx2tf_or_skip()
    assert "pip exited 1" in str(skipped.value)
    assert "edgebench toolchains install tflite" in str(skipped.value)


def test_an_installed_onnx2tf_toolchain_is_returned_not_skipped(tmp_path, monkeypatch):
    from edgebench.converters.toolchain_specs import TOOLCHAINS

    monkeypatch.setenv("EDGEBENCH_TOOLCHAINS_DIR", str(tmp_path))
    spec = TOOLCHAINS["tflite"]
    venv = tmp_path / "tflite" / "venv-1"
    for relative in ["bin/python", *(path for _, path in spec.executables)]:
        (venv / relative).parent.mkdir(parents=True, exist_ok=True)
        (venv / relative).write_text("")
    state = {
        "state": "installed",
        "venv": venv.name,
        "version": "1.29.24",
        "requirements": list(spec.requirements),
    }
    (tmp_path / "tflite" / "toolchain.json").write_text(json.dumps(state))
    status = onnx2tf_or_skip()
    assert (status.state, status.version) == ("installed", "1.29.24")
