"""A framework is one folder: the toy framework in tests/data/toy_framework/toy/ (a format
with its converter, a benchmark tool's adapter and a DSP backend), listed only through
EDGEBENCH_FRAMEWORKS_PATH, gets converted, planned and measured cells on the emulated phone
through its tool, with no line of edgebench edited."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.labs import write_phone_lab

pytestmark = pytest.mark.load_sensitive

TOY_FRAMEWORKS = Path(__file__).resolve().parent.parent / "data" / "toy_framework"
QUICK = ["--warmup", "1", "--iterations", "8", "--min-time", "0", "--cores", "0"]
#: toybench: says when it took the DSP, then one summary line for the model it was given.
TOYBENCH = """#!/bin/sh
case " $* " in *" --dsp "*) echo "running on dsp";; esac
echo "$1 min = 1.5 max = 2.5 avg = 2.0"
"""


def test_the_folder_is_listed_with_its_rows_converter_and_tool() -> None:
    script = (
        "import json\n"
        "from edgebench import compute_backends, converters, frameworks\n"
        "from edgebench.framework_tools import ADAPTERS\n"
        "print(json.dumps({'frameworks': frameworks.framework_names(),\n"
        "  'backends': compute_backends.backends_of('toy'),\n"
        "  'names': list(compute_backends.BACKEND_NAMES),\n"
        "  'converter': type(converters.get_converter('toy')).__name__,\n"
        "  'tool': ADAPTERS['toy'].__name__}))\n"
    )
    env = {**os.environ, "EDGEBENCH_FRAMEWORKS_PATH": str(TOY_FRAMEWORKS)}
    listed = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert listed.returncode == 0, listed.stderr
    found = json.loads(listed.stdout)
    assert found["frameworks"][-1] == "toy" and found["frameworks"][0] == "onnxruntime"
    assert found["backends"] == ["cpu", "dsp"] and found["names"][-1] == "dsp"
    assert found["converter"] == "ToyConverter" and found["tool"] == "ToyBenchAdapter"

    without = subprocess.run(
        [sys.executable, "-c", "from edgebench import frameworks as f; print(f.framework_names())"],
        env={k: v for k, v in os.environ.items() if k != "EDGEBENCH_FRAMEWORKS_PATH"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert without.returncode == 0 and "toy" not in without.stdout, without.stderr


def test_the_toy_framework_gets_measured_cells_on_the_phone(
    run_cli, eb_env, emulated_phone, tmp_path, conv_model
) -> None:
    tools_bin = tmp_path / "bin"
    tools_bin.mkdir()
    (tools_bin / "toybench").write_text(TOYBENCH)
    (tools_bin / "toybench").chmod(0o755)
    lab = write_phone_lab(
        tmp_path / "lab.toml",
        emulated_phone,
        ['runner = "framework-tools"', f'tools_bin = "{tools_bin}"'],
    )
    eb_env["EDGEBENCH_FRAMEWORKS_PATH"] = str(TOY_FRAMEWORKS)
    where = ["--lab", str(lab), "--devices", "emu-phone", "--models", str(conv_model)]
    choice = ["--frameworks", "toy", "--backends", "cpu,dsp", "--format", "jsonl"]
    result = run_cli(["run", *where, *choice, *QUICK])
    assert result.returncode in (0, 1), result.stderr
    records: dict[str, dict[str, Any]] = {}
    for line in result.stdout.splitlines():
        record = json.loads(line)
        records[record["backend"]] = record
    assert set(records) == {"cpu", "dsp"}, result.stderr
    for backend, record in records.items():
        assert record["framework"] == "toy" and record["status"] == "ok", record["error"]
        assert record["latency_ms"]["mean"] == pytest.approx(2.0), backend
        artifact = record["artifact"]
        assert artifact["format"] == "toy" and artifact["converter_version"] == "toy-1"
        assert [f["name"] for f in artifact["files"]] == ["model.toy"]
    assert records["dsp"]["cell_id"].endswith("/bdsp")
    assert records["dsp"]["accelerator"]["api"] == "ToyDSP"
    assert records["dsp"]["accelerator"]["device"] == "dsp0"
    assert records["cpu"]["accelerator"] is None
