"""Every script in benchmarks/ runs with its smallest settings and prints its figures, so a
refactor that breaks one fails here rather than the next time someone measures (three had
rotted unnoticed: issue 41).

The scripts are found by globbing, so a new one is covered from the day it lands: it fails here
until its smallest settings and the figures it prints are registered in ``SMOKE``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from fakes.llm_models import llama_bench_or_skip
from fakes.models import save_conv_model
from fakes.toolchains import pnnx_or_skip

from edgebench import process_group

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "benchmarks"
#: One script with its smallest settings takes 1-45 s on a loaded 2-core machine; past this
#: it hangs, and its whole process tree is stopped.
TIMEOUT_S = 300
#: In ``Smoke.args``: a one-conv ONNX model (1x3x32x32) made for the run.
TINY_MODEL = "{tiny_model}"
#: In ``Smoke.args``: the test's own temporary folder.
TMP = "{tmp}"
#: flake_hunt.py's smallest run: one load-sensitive test of a second, run once.
FLAKE_FILE = "tests/measure/test_target_ci.py"
FIGURE = r"[-+]?\d[\d.]*(?:e[-+]?\d+)?"  # a printed number: 12, 0.973, 2.38e-06


@dataclass(frozen=True)
class Smoke:
    """How one script runs in seconds, and what it must print then."""

    #: Its smallest settings.
    args: tuple[str, ...]
    #: Patterns (``re.MULTILINE``) its standard output must hold: its figures, not only a
    #: header. ``{n}`` stands for a printed number.
    prints: tuple[str, ...]
    #: Fixtures that make what it measures first (an edgebench-native build, the arm64 board),
    #: outside its timeout and shared with the other tests that need them.
    fixtures: tuple[str, ...] = ()
    #: The start of the one line it prints, with exit status 2, on a machine without the
    #: hardware it measures; None: it runs everywhere the suite runs.
    needs: str | None = None


SMOKE: dict[str, Smoke] = {
    "arm_output_error.py": Smoke(
        ("--models", TINY_MODEL, "--frameworks", "onnxruntime", "--precision", "fp32"),
        (r"^model\s+framework\s+prec\s+max abs diff", r"onnxruntime\s+fp32\s+{n}\s+{n}"),
        fixtures=("arm_board",),
    ),
    "change_points.py": Smoke(
        ("--histories", "1"),
        (r"^quiet\s+{n}\s+{n}", r"^step 10%\s+{n}\s+{n}\s+{n}%"),
    ),
    "cluster_scale.py": Smoke(
        ("--devices", "2", "--cells", "1", "--sleep", "0.1", "--nodes", "1"),
        (r"total/ideal\s+overhead/cell", r"^\s+2\s+2\s+{n}s\s+{n}s\s+{n}s\s+{n}\s+{n} ms"),
    ),
    "convert_cold.py": Smoke(
        ("--models", "mobilenetv2", "--no-onnx2tf"),
        (
            r"^tflite\s+{n}s\s+{n}s$",
            r"^all formats: {n} s",
            r"onnx-qdq: skipped \(it makes int8 only; this times fp32\)",
        ),
    ),
    "fidelity.py": Smoke(
        ("--quick", "--models", "mobilenetv2"),
        (r"^mobilenetv2\s+openvino\s+{n}\s+{n}\s+{n} \[{n}, {n}\]", r"^\d+ of \d+ rows meet"),
    ),
    "flake_hunt.py": Smoke(
        ("--runs", "1", "--hog", "0", "-k", "test_ci_halfwidth_of_order_statistics", FLAKE_FILE),
        (r"test_ci_halfwidth_of_order_statistics\s+1\s+1\s+0\s+0", r"^1 tests, .* 0 failed"),
    ),
    "gpu_check.py": Smoke(
        ("--models", "mobilenetv2", "--rounds", "1", "--iterations", "5"),
        (r"^\s+fidelity\s+edgebench tensorrt p50 {n} ms",),
        needs="gpu_check: needs an NVIDIA GPU",
    ),
    # Its dry run on lavapipe takes minutes and has its own test
    # (tests/native_runner/test_gpu_first_light.py); here: it starts and says what it lacks.
    "gpu_first_light.py": Smoke(
        ("run", "--kit", f"{TMP}/no-kit", "--out", f"{TMP}/out", "--models", "mobilenetv2"),
        (),
        needs="gpu_first_light: no kit at ",
    ),
    "gpu_overhead.py": Smoke(
        ("--rounds", "1", "--iterations", "1"),
        (r"^native fp32\s+fp32\s+{n}", r"^python fp16\s+fp16\s+{n}"),
        fixtures=("native_x86",),
    ),
    # Builds nothing (a tool's build takes minutes): the libraries the tools would link.
    "fidelity_tools.py": Smoke(
        ("--dry-run", "--frameworks", "ncnn"),
        (r"^  ncnn  links ncnn-\S+; benchncnn: \d+ built$",),
        fixtures=("native_x86",),
    ),
    "openvino_clock_gap.py": Smoke(
        (TINY_MODEL, "--blocks", "2", "--block-iterations", "3", "--warmup", "1"),
        (
            r"^\S.*\s+{n}\s+{n}\s+{n}\s+{n} \[{n}, {n}\] \(2 blocks, core \d+\)$",
            r"^the Python side of a call: {n} us \(the wrapper's part, against the binding "
            r"alone: {n} us\)$",
        ),
    ),
    "litert_api_gap.py": Smoke(
        (TINY_MODEL, "--blocks", "2", "--block-iterations", "3", "--warmup", "1"),
        (r"^\S.*\s+{n}\s+{n}\s+{n} \[{n}, {n}\] \(2 block pairs, core \d+\)$",),
    ),
    "harness_overhead.py": Smoke(
        ("--rounds", "1", "--iters", "5"),
        (r"loop cost {n} ns/iteration", r"ratio {n} \(goal <= 1.02\)"),
    ),
    "native_fidelity.py": Smoke(
        ("--quick", "--models", "mobilenetv2"),
        # benchncnn is built apart from edgebench-native: without it, the row says so.
        (r"^mobilenetv2\s+ncnn-native\s+{n}\s+{n}|^skip mobilenetv2 ncnn-native: ",),
        fixtures=("native_x86",),
    ),
    # llm-tiny, two block pairs; skips naming the command when llama-bench is not built (a
    # build takes minutes) or llama-cpp-python is not installed.
    "llm_fidelity.py": Smoke(
        ("--quick",),
        (r"^llm-tiny q8_0\s+pp\s+{n}\s+{n}\s+{n} \[{n}, {n}\]", r"^\d+ of \d+ rows meet the goal"),
        fixtures=("llama_bench_built", "llm_tiny_q8_0"),
    ),
    "nightly_gate.py": Smoke(
        ("--histories", "1"),
        (r"^quiet\s+history\s+{n}", r"^step 10%\s+history\s+{n}\s+{n}%"),
    ),
    # These two start a real sshd and adb server, as the tests do: the fixtures skip, naming
    # the package, on a machine without them (the README's test line alone).
    "overhead.py": Smoke(
        ("--repeats", "1"),
        (r"^\s+ssh\s+{n} ms .*overhead vs local\s+{n} ms", r"^\s+adb\s+{n} ms$"),
        fixtures=("shared_sshd", "adb_server"),
    ),
    "parallel.py": Smoke(
        ("--devices", "1", "--min-time", "0"),
        (r"all devices in one run: {n} s -> {n}x the slowest device",),
        fixtures=("adb_server",),
    ),
    "publish_site.py": Smoke(
        ("--nights", "3", "--cells", "2", "--step-night", "1", "--step-every", "1"),
        (r"^first build: {n} s: \d+ pages written", r"^rebuild after one more night: {n} s"),
    ),
    "quantization.py": Smoke(
        ("--models", "mobilenetv2", "--frameworks", "onnxruntime", "--iterations", "1"),
        (r"int8/fp32 p50", r"^mobilenetv2\s+onnxruntime\s+{n}\s+{n}\s+{n}\s+{n}"),
    ),
    "stage_timing.py": Smoke(
        ("--blocks", "1", "--iterations", "2"),
        tuple(
            rf"^{framework}\s+{{n}}\s+{{n}}\s+{{n}}\s+copy_in {{n}}"
            for framework in ("onnxruntime", "openvino", "mnn", "ncnn", "tflite")
        ),
        fixtures=("pnnx_toolchain",),  # its ncnn artifact is converted by pnnx
    ),
    "store_scale.py": Smoke(
        ("--nights", "2", "--cells", "1", "--repeats", "1"),
        (r"recommend s", r"^\s+2\s+{n}\s+{n}\s+{n}\s+{n}\s+{n}\s+{n}\s+{n}\s+{n}\s+{n}$"),
    ),
}


@pytest.fixture
def pnnx_toolchain() -> None:
    """ncnn's converter toolchain (pnnx, 110 MB), installed on first use as the converter tests
    do; skip naming the command when it cannot be (on a fresh cache no earlier test may have
    installed it)."""
    pnnx_or_skip()


@pytest.fixture
def llama_bench_built() -> Path:
    """llama-bench as edgebench built it for this host, and llama-cpp-python (the benchmark's
    other side), else skip naming what is missing."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    return llama_bench_or_skip()


def benchmark_scripts() -> list[Path]:
    """Every script in benchmarks/: each shell script, and each Python file with a
    ``__main__`` block (not a module the scripts share, such as fidelity_sides.py)."""
    python = [p for p in BENCHMARKS.glob("*.py") if '__name__ == "__main__"' in p.read_text()]
    return sorted([*python, *BENCHMARKS.glob("*.sh")])


def test_every_registered_script_exists():
    stale = set(SMOKE) - {p.name for p in benchmark_scripts()}
    assert not stale, f"SMOKE registers scripts benchmarks/ does not have: {sorted(stale)}"


@pytest.mark.load_sensitive
@pytest.mark.parametrize("script", benchmark_scripts(), ids=lambda p: p.name)
def test_benchmark_runs_with_its_smallest_settings(
    script: Path, request: pytest.FixtureRequest, tmp_path: Path, eb_env: dict[str, str]
):
    smoke = SMOKE.get(script.name)
    if smoke is None:
        pytest.fail(
            f"benchmarks/{script.name} has no smoke settings: register its smallest settings "
            "and the figures it prints in SMOKE in tests/test_benchmarks_run.py"
        )
    for fixture in smoke.fixtures:
        request.getfixturevalue(fixture)
    args = list(smoke.args)
    if TINY_MODEL in args:
        tiny = save_conv_model(tmp_path / "tiny.onnx", [1, 3, 32, 32])
        args = [str(tiny) if a == TINY_MODEL else a for a in args]
    args = [a.replace(TMP, str(tmp_path)) for a in args]
    interpreter = [sys.executable] if script.suffix == ".py" else ["bash"]
    try:
        done = process_group.run(
            [*interpreter, str(script), *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            env=eb_env,
            cwd=REPO,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{script.name} {' '.join(args)} ran past {TIMEOUT_S} s: {exc.stdout!r:.2000}")
    said = f"{script.name} {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, said
    if smoke.needs is not None and done.returncode == 2:
        (line,) = done.stdout.splitlines()  # one line, saying what is missing
        assert line.startswith(smoke.needs), said
        return
    assert done.returncode == 0, said
    missing = [
        pattern
        for pattern in smoke.prints
        if not re.search(pattern.replace("{n}", FIGURE), done.stdout, re.MULTILINE)
    ]
    assert not missing, f"it did not print {missing}; {said}"
