"""Bad input never crashes edgebench: corrupt models, hostile file names, malformed labs,
profiles and plans, bad option values.

The product promise: one clear error line naming the thing and the fix, a non-zero exit code,
no traceback, and results already collected are kept.
"""

from __future__ import annotations

import json
import os
import tempfile
import tomllib
from collections.abc import Sequence
from pathlib import Path

import onnx
import pytest
from fakes.cli_checks import (
    ERROR_PREFIX,
    FAST,
    assert_failed_record,
    assert_no_traceback,
    assert_one_error_line,
    cli,
    records_of,
)
from fakes.models import save_conv_model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from edgebench.errors import UserError
from edgebench.framework_tools import ADAPTERS, ToolParseError
from edgebench.lab.lab_file import load_lab
from edgebench.lab.profiles import load_profile
from edgebench.planning.plan_file import load_plan

# --------------------------------------------------------------------------- malformed ONNX


def _graph_model(nodes, inputs, outputs, opsets, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model


def build_onnx_corpus(folder: Path) -> dict[str, Path]:
    """Case name -> path of a malformed model (plus "good")."""
    folder.mkdir(parents=True, exist_ok=True)
    good = save_conv_model(folder / "good.onnx", [1, 3, 16, 16])
    data = good.read_bytes()
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    cases: dict[str, Path] = {"good": good}

    def put(name: str, payload: bytes) -> None:
        cases[name.removesuffix(".onnx")] = folder / name
        (folder / name).write_bytes(payload)

    put("empty.onnx", b"")
    put("random.onnx", bytes((i * 97 + 13) % 256 for i in range(2048)))
    put("truncated.onnx", data[: len(data) // 2])
    put(
        "tensor_not_model.onnx",
        helper.make_tensor("t", TensorProto.FLOAT, [2], [1.0, 2.0]).SerializeToString(),
    )
    missing_init = _graph_model(
        [helper.make_node("Conv", ["x", "w"], ["y"])], [x], [y], [helper.make_opsetid("", 17)]
    )
    put("missing_initializer.onnx", missing_init.SerializeToString())
    unknown_op = _graph_model(
        [helper.make_node("Frobnicate", ["x"], ["y"], domain="com.nowhere")],
        [x],
        [y],
        [helper.make_opsetid("", 17), helper.make_opsetid("com.nowhere", 1)],
    )
    put("unknown_domain_op.onnx", unknown_op.SerializeToString())
    # A missing path or a folder is a usage error before any run (test_bad_input_more.py).
    if os.geteuid() != 0:  # root reads anything: the case would not be bad input
        put("unreadable.onnx", data)
        (folder / "unreadable.onnx").chmod(0)
    return cases


@pytest.fixture(scope="module")
def onnx_corpus_run(tmp_path_factory, mod_env):
    """ONE run over every malformed model, a good one and an unreachable device."""
    folder = tmp_path_factory.mktemp("onnx-corpus")
    cases = build_onnx_corpus(folder)
    lab = folder / "lab.toml"
    lab.write_text('[devices.gone]\ntransport = "ssh"\nhost = "127.0.0.1"\nport = 1\n')
    models = ",".join(str(p) for p in cases.values())
    args = ["run", "--lab", str(lab), "--devices", "local,gone", "--models", models]
    result = cli([*args, "--frameworks", "onnxruntime", *FAST], mod_env)
    by_case: dict[tuple[str, str], dict] = {}
    for record in records_of(result):
        case = next(c for c, p in cases.items() if record["model_path"] == str(p))
        by_case[(record["device"], case)] = record
    return result, cases, by_case


def test_corrupt_models_fail_their_cells_and_keep_the_good_one(onnx_corpus_run, mod_env):
    result, cases, by_case = onnx_corpus_run
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr
    assert set(by_case) == {(d, c) for d in ("local", "gone") for c in cases}
    assert by_case[("local", "good")]["status"] == "ok"
    # The unreachable device fails its cells with one line naming it.
    for case in cases:
        assert_failed_record(by_case[("gone", case)])
    assert "gone" in by_case[("gone", "good")]["error"]
    # Results already collected are stored, not only printed.
    shown = cli(["show", by_case[("local", "good")]["run_id"], "--format", "jsonl"], mod_env)
    assert shown.returncode == 0, shown.stderr
    stored = {(r["device"], r["model_path"]): r["status"] for r in records_of(shown)}
    assert stored[("local", str(cases["good"]))] == "ok"
    assert len(stored) == len(by_case)


BAD_ONNX_CASES = [
    "empty",
    "random",
    "truncated",
    "tensor_not_model",
    "missing_initializer",
    "unknown_domain_op",
    "unreadable",
]


@pytest.mark.parametrize("case", BAD_ONNX_CASES)
def test_corrupt_model_gives_one_line_naming_the_file(onnx_corpus_run, case):
    _, cases, by_case = onnx_corpus_run
    if case not in cases:
        pytest.skip("running as root: every file is readable")
    record = by_case[("local", case)]
    assert_failed_record(record)
    assert cases[case].name in record["error"], record["error"]
    if case == "empty":  # refused when the model is resolved, not by each framework
        assert "empty (0 bytes)" in record["error"], record["error"]


# --------------------------------------------------------------------------- artifacts


@pytest.fixture(scope="module")
def artifact_run(tmp_path_factory, mod_env):
    folder = tmp_path_factory.mktemp("artifacts")
    good = save_conv_model(folder / "good.onnx", [1, 3, 16, 16])
    (folder / "trunc.tflite").write_bytes(b"\x1c\x00\x00\x00TFL3\x00\x00\x12\x00\x1c\x00")
    (folder / "lonely.param").write_text("7767517\n1 1\nInput data 0 1 data\n")
    (folder / "garbage.xml").write_text("<net name='x' version='11'><layers><layer ")
    (folder / "garbage.bin").write_bytes(b"\x00\x01" * 32)
    (folder / "junk.mnn").write_bytes(b"MNN?" + bytes(range(60)))
    artifacts = {
        "tflite": folder / "trunc.tflite",
        "ncnn": folder / "lonely.param",
        "openvino": folder / "garbage.xml",
        "mnn": folder / "junk.mnn",
    }
    models = ",".join(str(p) for p in [good, *artifacts.values()])
    result = cli(["run", "--models", models, "--frameworks", ",".join(artifacts), *FAST], mod_env)
    return result, good, artifacts


def test_broken_artifacts_fail_in_one_line_and_keep_the_good_model(artifact_run):
    result, good, artifacts = artifact_run
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr
    records = records_of(result)
    for framework, path in artifacts.items():
        (own,) = [
            r for r in records if r["model_path"] == str(path) and r["framework"] == framework
        ]
        assert_failed_record(own)
    for record in records:
        if record["model_path"] == str(good):
            # A missing converter toolchain skips with the install command; never a failure.
            assert record["status"] in ("ok", "skipped"), record
            if record["status"] == "skipped":
                assert "toolchains install" in record["error"], record["error"]
        elif record["status"] != "failed":
            assert record["status"] == "skipped", record
        assert "\n" not in (record["error"] or "")


def test_broken_openvino_xml_gives_the_reason_not_the_source_line(artifact_run):
    result, _, artifacts = artifact_run
    (record,) = [
        r
        for r in records_of(result)
        if r["model_path"] == str(artifacts["openvino"]) and r["framework"] == "openvino"
    ]
    if "could not compile" not in record["error"]:
        pytest.skip(f"openvino did not load the model: {record['error']}")
    assert "Exception from" not in record["error"] and "core.cpp" not in record["error"]
    assert "pars" in record["error"].lower(), record["error"]


def test_ncnn_param_without_bin_names_the_missing_file(artifact_run):
    result, _, artifacts = artifact_run
    (record,) = [
        r
        for r in records_of(result)
        if r["model_path"] == str(artifacts["ncnn"]) and r["framework"] == "ncnn"
    ]
    assert "lonely.bin" in record["error"], record["error"]


def test_relative_model_path_converts(tmp_path, eb_env):
    save_conv_model(tmp_path / "good.onnx", [1, 3, 16, 16])
    result = cli(["run", "--models", "good.onnx", "--frameworks", "mnn", *FAST], eb_env, tmp_path)
    assert_no_traceback(result)
    assert [r["status"] for r in records_of(result)] == ["ok"], result.stdout


# --------------------------------------------------------------------------- hostile file names

HOSTILE_NAMES = [
    "my model.onnx",
    "a;b.onnx",
    "q'uo\"te.onnx",
    "$(touch pwned).onnx",
    "`touch pwned2`.onnx",
    "-rf.onnx",
    "ünïcødé模型.onnx",
    "new\nline.onnx",
    "star*?[x].onnx",
]


def test_hostile_model_file_names_run_and_inject_nothing(tmp_path, eb_env):
    work = tmp_path / "work"
    work.mkdir()
    paths = []
    for name in HOSTILE_NAMES:
        try:
            paths.append(save_conv_model(work / name, [1, 3, 8, 8]))
        except OSError:
            continue  # the file system refuses this name
    save_conv_model(work / "-dash.onnx", [1, 3, 8, 8])
    args = ["run", "--frameworks", "onnxruntime", *FAST, "--models=-dash.onnx"]
    for path in paths:
        args += ["--models", str(path)]
    result = cli(args, eb_env, cwd=work)
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr
    statuses = {r["model_path"]: r["status"] for r in records_of(result)}
    # Relative paths are recorded as the absolute path that was measured.
    assert statuses == {**{str(p): "ok" for p in paths}, str(work / "-dash.onnx"): "ok"}
    assert not [p for p in tmp_path.rglob("*pwned*") if ".onnx" not in p.name]


# --------------------------------------------------------------------------- labs and profiles


LABS = {
    "syntax": "[devices.a\ntransport = 'adb'\n",
    "unknown_key": '[devices.a]\ntransport = "adb"\nserial = "X1"\ncolour = "red"\n',
    "missing_serial": '[devices.a]\ntransport = "adb"\n',
    "bad_port": '[devices.a]\ntransport = "ssh"\nhost = "h"\nport = 70000\n',
    "port_string": '[devices.a]\ntransport = "ssh"\nhost = "h"\nport = "22"\n',
    "password": '[devices.a]\ntransport = "ssh"\nhost = "h"\npassword = "hunter2"\n',
    "unknown_profile": '[devices.a]\ntransport = "adb"\nserial = "X1"\nprofile = "no-chip"\n',
    "profile_file_broken": '[devices.a]\nprofile = "broken-profile.toml"\n',
    "device_name_spaces": '[devices."my phone"]\ntransport = "adb"\nserial = "X1"\n',
    "not_utf8": b"\xff\xfe[devices]\n",
    "devices_not_table": "devices = 3\n",
    "missing_file": None,
    "directory": "DIR",
}
LAB_MENTIONS = {
    "unknown_key": "colour",
    "missing_serial": "serial",
    "bad_port": "port",
    "port_string": "port",
    "password": "password",
    "unknown_profile": "no-chip",
    "profile_file_broken": "broken-profile.toml",
    "device_name_spaces": "my phone",
}


def _write_lab(folder: Path, case: str) -> Path:
    path = folder / f"{case}.toml"
    content = LABS[case]
    (folder / "broken-profile.toml").write_text('schema = "edgebench.profile/1"\nname = 3\n')
    if content == "DIR":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    return path


def _lab_params():
    for case in LABS:
        for command in ("devices", "run"):
            yield pytest.param(case, command, id=f"{case}-{command}")


@pytest.mark.parametrize(("case", "command"), list(_lab_params()))
def test_malformed_lab_is_one_error_line(tmp_path, run_cli, conv_model, case, command):
    lab = _write_lab(tmp_path, case)
    if command == "devices":
        args = ["devices", "--lab", str(lab)]
    else:
        # An existing model: a missing one is refused before the lab is read.
        args = ["run", "--lab", str(lab), "--devices", "a", "--models", str(conv_model), *FAST]
    line = assert_one_error_line(run_cli(args))
    assert lab.name in line, line
    if case in LAB_MENTIONS:
        assert LAB_MENTIONS[case] in line, line
    assert "hunter2" not in line


def test_undefined_device_name_with_spaces(run_cli, conv_model):
    line = assert_one_error_line(
        run_cli(["run", "--devices", "my phone", "--models", str(conv_model), *FAST])
    )
    assert "my phone" in line


# --------------------------------------------------------------------------- plans

PLANS = {
    "syntax": 'name = "p"\nmodels = [\n',
    "unknown_key": 'modles = ["x"]\n',
    "threads_zero": "[sweep]\nthreads = [0]\n",
    "precision": '[sweep]\nprecision = "int4"\n',
    "timing_string": '[timing]\niterations = "many"\n',
    "sweep_not_table": "sweep = 3\n",
    "lab_not_string": "lab = 5\n",
    "lab_missing": 'lab = "no-lab.toml"\n',
    "name_not_string": "name = 3\n",
    "models_not_strings": "models = [1, 2]\n",
    "alpha": "[thresholds]\nalpha = 2\n",
    "not_utf8": b"\xff\xfe",
    "missing_file": None,
    "directory": "DIR",
    "lab_unknown_user": 'lab = "~no-such-user-xyz/lab.toml"\n',
}
PLAN_MENTIONS = {
    "unknown_key": "modles",
    "threads_zero": "threads",
    "precision": "int4",
    "timing_string": "iterations",
    "lab_missing": "no-lab.toml",
}


@pytest.mark.parametrize(
    "case",
    [c for c in PLANS],
)
def test_malformed_plan_is_one_error_line(tmp_path, run_cli, case):
    path = tmp_path / f"{case}.toml"
    content = PLANS[case]
    if content == "DIR":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    line = assert_one_error_line(run_cli(["run", "--plan", str(path)]))
    if case != "lab_missing":  # that error names the lab file the plan points to
        assert path.name in line, line
    if case in PLAN_MENTIONS:
        assert PLAN_MENTIONS[case] in line, line


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('[thresholds]\nmetric = "bogus"\n', id="unknown_metric"),
        pytest.param('schema = "edgebench.plan/99"\n', id="unknown_schema"),
        pytest.param("[sweep]\nconcurrency = 0\n", id="concurrency_zero"),
        pytest.param("[thresholds]\nmin_effect = 1.5\n", id="min_effect"),
    ],
)
def test_plan_values_are_checked_when_loading(tmp_path, text):
    path = tmp_path / "plan.toml"
    path.write_text(text)
    with pytest.raises(UserError) as caught:
        load_plan(path)
    assert "\n" not in str(caught.value) and path.name in str(caught.value)


# --------------------------------------------------------------------------- option values


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--cores", "-1"], id="cores-negative"),
        pytest.param(["--threads", "abc"], id="threads-abc"),
        pytest.param(["--shape", "1,x"], id="shape-1x"),
        pytest.param(["--precision", "int4"], id="precision-int4"),
        pytest.param(["--devices", ""], id="devices-empty"),
        pytest.param(["--frameworks", "nosuch"], id="frameworks-unknown"),
    ],
)
def test_bad_run_option_is_one_error_line(run_cli, conv_model, args):
    result = run_cli(
        ["run", "--models", str(conv_model), "--frameworks", "onnxruntime", *FAST, *args]
    )
    line = assert_one_error_line(result, only_line=False)
    assert "invalid literal" not in line and "Error" not in line.removeprefix(ERROR_PREFIX)
    assert not records_of(result)


def test_show_unknown_metric_is_one_error_line(run_cli):
    assert_one_error_line(run_cli(["show", "--metric", "foo"]))


# --------------------------------------------------------------------------- property tests

PROPERTY = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

NATIVE_SAMPLES = {
    "tflite": (
        "Running benchmark for at least 50 iterations and at least 1 seconds\n"
        "count=50 first=79449 curr=81350 min=77385 max=88213 avg=79732 std=1929\n"
        "Inference timings in us: Init: 17187, First inference: 3512391, "
        "Warmup (avg): 3.51239e+06, Inference (avg): 2.95034e+06\n"
        "Memory footprint delta from the start of the tool (MB): init=39.4531 overall=40.8281\n"
        "Initialized session in 17.187ms.\n"
    ),
    "ncnn": "loop_count = 4\nnum_threads = 1\n   mobilenet_v2  min =   15.13  max =   15.79"
    "  avg =   15.49\n",
    "mnn": "--------> Benchmarking... loop = 20, warmup = 5\n"
    "[ - ] tinyresnet.mnn              max =    2.871 ms  min =    1.973 ms  avg =    2.289 ms\n",
    "tnn": "I/tnn: Print [File test/timer.cc][Line 59] m.tnnproto - X86     TNN Benchmark time"
    " cost: min =  3.718   ms  |  max =  5.653   ms  |  avg =  4.725   ms\n",
    "openvino": "[ INFO ] Build ......... 2026.4.1\n[ INFO ] First inference took 7.91 ms\n"
    "[ INFO ] Count:            50 iterations\n[ INFO ] Duration:         315.6 ms\n"
    "[ INFO ] Latency:\n[ INFO ]    Median:     6.05 ms\n[ INFO ]    Average:    6.31 ms\n"
    "[ INFO ]    Min:        5.42 ms\n[ INFO ]    Max:        9.02 ms\n"
    "[ INFO ] Throughput:   158.43 FPS\n",
    # tests/data/mnn_llm_bench/llm-tiny-f16.txt, its log line, header and two rows
    "mnn-llm": "The device supports: i8sdot:0, fp16:0, i8mm: 0, sve2: 0, sme2: 0\n"
    "| model                          |  modelSize | backend    | threads | precision  | test"
    "          |        t/s |\n| ------------------------------ | ---------: | ---------- |"
    " ----: | ---------- | ------------- | ---------: |\n| llm-tiny-f16                   |"
    "  19.27 MiB | CPU        |     1 | Low        | pp16          | 6112.99 ± 6290.51 |\n"
    "| llm-tiny-f16                   |  19.27 MiB | CPU        |     1 | Low        | tg8"
    "           | 223.47 ± 60.37 |\n",
    # tests/data/llama_bench/llm-tiny-q8_0.json, two of its tests with the fields read
    "llama.cpp": '[{"build_commit": "0c1e570", "build_number": 1, "model_type": "qwen2 ?B Q8_0",'
    ' "n_prompt": 16, "n_gen": 0, "n_depth": 0, "avg_ns": 1242918, "samples_ns": [1227891,'
    ' 1257946], "samples_ts": [13030.5, 12719.1]},\n{"build_commit": "0c1e570",'
    ' "build_number": 1, "model_type": "qwen2 ?B Q8_0", "n_prompt": 0, "n_gen": 8,'
    ' "n_depth": 0, "avg_ns": 5708403, "samples_ns": [5915252, 5501555],'
    ' "samples_ts": [1352.44, 1454.13]}]\n',
    "tensorrt": "&&&& RUNNING TensorRT.trtexec [TensorRT v100900] [b34] # trtexec\n"
    "[04/07/2025-23:59:33] [I] TensorRT version: 10.9.0\n"
    "[04/07/2025-23:59:46] [I] Engine built in 10.7204 sec.\n"
    "[04/07/2025-23:59:50] [I] Timing trace has 2077 queries over 3.0039 s\n"
    "[04/07/2025-23:59:50] [I] === Performance summary ===\n"
    "[04/07/2025-23:59:50] [I] Throughput: 691.435 qps\n"
    "[04/07/2025-23:59:50] [I] Latency: min = 1.4209 ms, max = 3.047 ms, mean = 1.48372 ms, "
    "median = 1.43823 ms, percentile(90%) = 1.45624 ms, percentile(99%) = 2.61597 ms\n",
}
_HOSTILE_TOKENS = st.sampled_from(
    ["nan", "-nan", "inf", "-inf", "1e400", "-0", "", "99999999999999999999999", "1e-400",
     "0", "-5", "=", ":", "|", "ms", "us", "\x1b[31m", "\r", "\x00", "٣", "1.2.3", "e5"]
)  # fmt: skip


@st.composite
def mutated_output(draw, framework: str) -> str:
    """A real output with numbers replaced, lines dropped, duplicated, cut or added."""
    import re

    text = NATIVE_SAMPLES[framework]
    text = re.sub(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?", lambda m: draw(_HOSTILE_TOKENS), text)
    lines = text.splitlines()
    out = []
    for line in lines:
        action = draw(st.sampled_from(["keep", "keep", "drop", "twice", "cut", "junk"]))
        if action == "keep":
            out.append(line)
        elif action == "twice":
            out += [line, line]
        elif action == "cut":
            out.append(line[: draw(st.integers(0, len(line)))])
        elif action == "junk":
            out += [line, draw(st.text(max_size=40))]
    return "\n".join(out)


@pytest.mark.parametrize("framework", sorted(ADAPTERS))
@PROPERTY
@given(data=st.data())
def test_native_parsers_raise_only_native_parse_error(framework, data):
    text = data.draw(mutated_output(framework))
    adapter = ADAPTERS[framework]()
    for model_path in (None, "m.tnnproto", "tinyresnet.mnn"):
        for args in ((text,), ("", text), ("", "", text)):
            try:
                adapter.parse(*args, model_path=model_path)
            except ToolParseError as exc:
                assert adapter.tool in str(exc)


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if value == value and abs(value) != float("inf") else "nan"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"


_STRINGS = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        ["adb", "ssh", "local", "python", "native", "0-3", "3-1", "0,2", "x86-generic",
         "snapdragon-8-gen-2", "p.toml", "../p.toml", "/nonexistent/p.toml", "~", "~/x",
         "~no-such-user-xyz/x", "-rf", "a b", "a\nb", "", "fp32", "fp16", "p50", "auto",
         "edgebench.lab/1", "edgebench.profile/1", "edgebench.plan/1", "/tmp", "127.0.0.1",
         "thermal_zone*", "none", "rapl"]
    ),
)  # fmt: skip
_SCALARS = st.one_of(
    _STRINGS, st.integers(-(2**63), 2**63 - 1), st.floats(), st.booleans(), st.integers(-2, 70000)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(_STRINGS, inner, max_size=4)
    ),
    max_leaves=12,
)


def _doc(keys: Sequence[str], nested: dict[str, Sequence[str]]):
    """A TOML document built from known keys (some with known sub-keys) and random ones."""
    key = st.one_of(st.sampled_from(list(keys)), st.text(min_size=1, max_size=8))
    sub = {k: st.dictionaries(st.sampled_from(list(v)) | _STRINGS, _VALUES, max_size=6)
           for k, v in nested.items()}  # fmt: skip

    @st.composite
    def build(draw):
        table = draw(st.dictionaries(key, _VALUES, max_size=8))
        for k, strategy in sub.items():
            if draw(st.booleans()):
                table[k] = draw(strategy)
        if "clusters" in nested and draw(st.booleans()):
            table["clusters"] = draw(st.lists(sub["clusters"], max_size=3))
        lines = [
            f"{json.dumps(k, ensure_ascii=False)} = {_toml_value(v)}" for k, v in table.items()
        ]
        return "\n".join(lines) + "\n"

    return st.one_of(build(), st.text(max_size=200))


_LAB_DEVICE_KEYS = ("transport", "profile", "work_dir", "python", "runner", "tools_bin",
                    "serial", "adb_host", "adb_port", "host", "port", "user", "key",
                    "known_hosts", "password")  # fmt: skip


@st.composite
def lab_docs(draw):
    if draw(st.booleans()):
        return draw(st.text(max_size=200))
    devices = draw(
        st.dictionaries(
            st.sampled_from(["a", "b", "local", "my phone", "x" * 70]) | st.text(max_size=6),
            st.dictionaries(st.sampled_from(_LAB_DEVICE_KEYS) | _STRINGS, _VALUES, max_size=7),
            max_size=3,
        )
    )
    top = {"devices": devices}
    if draw(st.booleans()):
        top["schema"] = draw(_STRINGS)
    if draw(st.integers(0, 4)) == 0:
        top[draw(_STRINGS)] = draw(_VALUES)
    return "\n".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in top.items()) + "\n"


PROFILE_DOCS = _doc(
    ["schema", "name", "description", "transport", "runner", "work_dir", "soc_ids"],
    {
        "clusters": ["name", "cpus", "max_freq_mhz", "core"],
        "energy": ["source"],
        "thermal": ["zones", "max_temp_c"],
    },
)
PLAN_DOCS = _doc(
    ["schema", "name", "lab", "devices", "models", "frameworks"],
    {
        "sweep": ["threads", "cores", "precision", "concurrency"],
        "timing": ["warmup", "iterations", "min_time", "max_time", "timeout"],
        "thresholds": ["min_effect", "alpha", "metric"],
        "telemetry": ["energy_source", "baseline_s", "period_s"],
    },
)


def _load_only_user_errors(loader, text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "input.toml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            loader(path)
        except UserError as exc:
            message = str(exc)
            assert message.strip() and "\n" not in message and "Traceback" not in message


@PROPERTY
@given(text=lab_docs())
def test_load_lab_raises_only_one_line_user_errors(text):
    _load_only_user_errors(load_lab, text)


@PROPERTY
@given(text=PROFILE_DOCS)
def test_load_profile_raises_only_one_line_user_errors(text):
    _load_only_user_errors(load_profile, text)


@PROPERTY
@given(text=PLAN_DOCS)
def test_load_plan_raises_only_one_line_user_errors(text):
    # "~unknownuser" as the plan's lab is a known crash (test_malformed_plan_is_one_error_line)
    try:
        lab = tomllib.loads(text).get("lab")
    except tomllib.TOMLDecodeError:
        lab = None
    if isinstance(lab, str) and lab.startswith("~") and lab != "~" and not lab.startswith("~/"):
        return
    _load_only_user_errors(load_plan, text)
