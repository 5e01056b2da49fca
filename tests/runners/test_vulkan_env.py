"""VK_DRIVER_FILES or VK_ICD_FILENAMES pointing at nothing usable hides the installed Vulkan
drivers: the probe and an ncnn Vulkan cell name the variable and its value instead of advising
to install packages that are there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.cli_checks import cli
from fakes.gpu_tools import VULKAN_SKIP, driver_manifest
from fakes.models import save_conv_model

from edgebench.runners import vulkan_info
from edgebench.runners.vulkan_env import driver_env_problem

QUICK = ["--warmup", "0", "--iterations", "2", "--min-time", "0", "--rounds", "1"]


def test_a_variable_that_names_no_driver_is_the_problem(tmp_path):
    garbage = tmp_path / "garbage.json"
    garbage.write_text('{"garbage": 1}')
    not_json = tmp_path / "notes.json"
    not_json.write_bytes(b"\xff\xfe not json")
    good = driver_manifest(tmp_path / "good.json", "libvulkan_lvp.so")
    gone = driver_manifest(tmp_path / "gone.json", str(tmp_path / "libgone.so"))
    empty_dir = tmp_path / "icd.d"
    empty_dir.mkdir()

    line = driver_env_problem({"VK_DRIVER_FILES": "/nonexistent"})
    assert line == (
        "VK_DRIVER_FILES=/nonexistent names no Vulkan driver (/nonexistent does not exist), so "
        "the loader ignores the installed ones: unset VK_DRIVER_FILES, or point it at a "
        "driver's .json manifest"
    )
    line = driver_env_problem({"VK_ICD_FILENAMES": str(garbage)})
    assert line.startswith(f"VK_ICD_FILENAMES={garbage} names no Vulkan driver ({garbage} is ")
    assert "no driver manifest (no ICD.library_path)" in line
    assert f"{not_json} is no JSON driver manifest" in driver_env_problem(
        {"VK_ICD_FILENAMES": str(not_json)}
    )
    assert f"names a driver that does not exist ({tmp_path / 'libgone.so'})" in (
        driver_env_problem({"VK_DRIVER_FILES": str(gone)})
    )
    assert "a folder with no driver manifest" in driver_env_problem(
        {"VK_DRIVER_FILES": str(empty_dir)}
    )
    # One usable entry is enough; unset or empty variables steer nothing.
    assert driver_env_problem({"VK_DRIVER_FILES": f"/nonexistent:{good}"}) is None
    assert driver_env_problem({"VK_DRIVER_FILES": str(tmp_path)}) is None  # holds good.json
    assert driver_env_problem({"VK_DRIVER_FILES": ""}) is None
    assert driver_env_problem({}) is None
    # The loader obeys VK_DRIVER_FILES first and then ignores VK_ICD_FILENAMES.
    both = {"VK_DRIVER_FILES": str(good), "VK_ICD_FILENAMES": "/nonexistent"}
    assert driver_env_problem(both) is None


@pytest.fixture(scope="module")
def vulkan_here() -> None:
    """A Vulkan driver is installed here (Mesa's lavapipe on CI) and ncnn can use it."""
    try:
        if not vulkan_info.vulkan_devices():
            pytest.skip(VULKAN_SKIP)
    except vulkan_info.VulkanUnavailable:
        pytest.skip(VULKAN_SKIP)
    ncnn = pytest.importorskip("ncnn")
    if ncnn.get_gpu_count() == 0:
        pytest.skip(VULKAN_SKIP)


@pytest.mark.parametrize("variable", ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"])
@pytest.mark.parametrize("target", ["nowhere", "garbage"])
def test_the_probe_and_the_cell_name_the_variable(vulkan_here, eb_env, tmp_path, variable, target):
    value = "/nonexistent"
    if target == "garbage":
        value = str(tmp_path / "garbage.json")
        Path(value).write_text("not a manifest")
    env = {k: v for k, v in eb_env.items() if k not in ("VK_DRIVER_FILES", "VK_ICD_FILENAMES")}
    env[variable] = value
    said = f"{variable}={value} names no Vulkan driver ("

    devices = cli(["devices"], env)
    assert devices.returncode == 0, devices.stderr
    (vulkan,) = [ln for ln in devices.stdout.splitlines() if ln.strip().startswith("vulkan:")]
    assert vulkan.strip().startswith(f"vulkan: none ({said}"), vulkan
    assert "install mesa" not in vulkan and f"unset {variable}" in vulkan

    model = save_conv_model(tmp_path / "conv.onnx", [1, 3, 16, 16])
    args = ["run", "--models", str(model), "--frameworks", "ncnn", "--backends", "vulkan"]
    run = cli([*args, *QUICK, "--format", "jsonl"], env)
    assert run.returncode == 0, run.stderr
    (record,) = [json.loads(ln) for ln in run.stdout.splitlines() if ln.startswith("{")]
    assert record["status"] == "unsupported", record
    assert record["error"].startswith(said) and "install mesa" not in record["error"], record
