"""benchmarks/gpu_first_light.py's dry run: the kit packed without wheels, then the whole run on
this machine's Vulkan device (lavapipe), through `edgebench run` with both runners."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.native_builds import first_vulkan_device

from edgebench.builds.native_runner import MANIFEST, BuiltRunner

pytestmark = pytest.mark.load_sensitive

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_first_light.py"


def script(eb_env: dict, *args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env={**eb_env, "PYTHONUNBUFFERED": "1"},
        timeout=timeout,
    )


def test_the_dry_run_measures_and_checks_every_cell_on_the_software_device(
    eb_env: dict, tmp_path: Path, native_x86_mnn: BuiltRunner
) -> None:
    device = first_vulkan_device()
    manifest = json.loads((native_x86_mnn.path.parent / MANIFEST).read_text())
    libraries = manifest["flags"]["libraries"]
    if "-DNCNN_VULKAN=ON" not in libraries["ncnn"] or "-DMNN_VULKAN=ON" not in libraries["mnn"]:
        pytest.skip("edgebench-native was built without Vulkan (libvulkan-dev; .ci/run has it)")
    kit, out = tmp_path / "kit", tmp_path / "out"
    packed = script(eb_env, "pack", "--kit", str(kit), "--no-download", timeout=300)
    assert packed.returncode == 0, packed.stdout + packed.stderr
    facts = json.loads((kit / "kit.json").read_text())
    assert facts["wheels"] == [] and not facts["benchncnn"]
    assert (kit / "native" / "bin" / "x86_64-linux" / facts["native_key"]).is_dir()

    ran = script(
        eb_env, "run", "--kit", str(kit), "--work", str(tmp_path / "work"), "--out", str(out),
        "--models", "mobilenetv2", "--precision", "fp32", "--warmup", "1", "--iterations", "2",
        "--min-time", "0", "--no-gpu-tests",
        timeout=1200,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    cells = {(r["device"], r["framework"]) for r in records}
    assert cells == {("gpu-python", "ncnn"), ("gpu-native", "ncnn"), ("gpu-native", "mnn")}
    for record in records:
        assert record["status"] == "ok", record.get("error")
        assert record["output_check"]["passed"], record["output_check"]
        assert record["accelerator"]["device"] == device["name"]
    native = [r for r in records if r["device"] == "gpu-native"]
    # The kit's build ran (EDGEBENCH_NATIVE_DIR pointed into the work folder).
    assert all(r["device_info"]["runner"] == "edgebench-native (x86_64-linux)" for r in native)
    table = (out / "first_light.txt").read_text()
    assert f"device: {device['name']}" in table
    rows = [line for line in table.splitlines() if line.startswith(("python ", "native "))]
    assert len(rows) == 3 and all(" pass " in row for row in rows), table
