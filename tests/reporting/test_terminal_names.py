"""A model file whose name holds an escape sequence, a carriage return and a line break runs
like any other file; every command that prints its name shows it escaped, so the terminal
gets no control byte and no table row is split."""

import json
import re

from fakes.cli_checks import FAST
from fakes.models import save_conv_model

from edgebench.terminal import printable

HOSTILE = "ev\x1b[2Jil\rx\ny"
SHOWN = r"ev\x1b[2Jil\rx\ny"
#: Any control character but the line breaks between lines (a CR is one too).
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def assert_terminal_safe(text: str) -> None:
    assert not CONTROL.search(text), repr(text)


def row_of(text: str, start: str) -> str:
    """The one line that starts with ``start``."""
    rows = [line for line in text.splitlines() if line.startswith(start)]
    assert len(rows) == 1, text
    return rows[0]


def test_printable_escapes_controls_only():
    assert printable(HOSTILE) == SHOWN
    assert printable(printable(HOSTILE)) == SHOWN
    assert printable("mobilenet v2 · fp16 — ≈ ★ \\n") == "mobilenet v2 · fp16 — ≈ ★ \\n"
    assert printable("a\u202eb\x85c\x7f") == r"a\u202eb\x85c\x7f"


def test_a_hostile_model_name_runs_and_prints_escaped(run_cli, tmp_path):
    model = save_conv_model(tmp_path / f"{HOSTILE}.onnx", [1, 3, 32, 32])
    # --reference on an ONNX model: a warning (through logging) that names the model.
    args = ["run", "--models", str(model), "--frameworks", "onnxruntime", "--reference"]
    first = run_cli([*args, str(model), *FAST])
    assert first.returncode == 0, first.stderr
    records = [json.loads(line) for line in first.stdout.splitlines()]
    assert [(r["model"], r["status"]) for r in records] == [(HOSTILE, "ok")]
    assert f"--reference {model} is ignored".replace(HOSTILE, SHOWN) in first.stderr
    assert f"· {SHOWN} · onnxruntime" in first.stderr  # the progress line
    run_id = records[0]["run_id"]

    table = run_cli([*args, str(model), *FAST[:-1], "table"])
    assert table.returncode == 0, table.stderr
    second = re.search(r"^run (\S+): 1 cells", table.stderr, re.M).group(1)
    for line in (table.stdout, table.stderr):
        assert_terminal_safe(line)
    assert row_of(table.stdout, f"{SHOWN} · fp32 · 1 thread")
    assert row_of(table.stdout, f"local/{SHOWN}/onnxruntime  ok ")
    assert row_of(table.stdout, "local   ")  # the matrix row, whole

    shown = run_cli(["show", run_id])
    compared = run_cli(["compare", run_id, second])
    recommended = run_cli(["recommend", "--devices", "local", "--model", HOSTILE])
    plot = ["--plot", str(tmp_path / "trend.svg")]
    history = run_cli(
        ["history", "--device", "local", "--model", HOSTILE, "--framework", "onnxruntime", *plot]
    )
    refused = run_cli(["recommend", "--devices", "local", "--model", "nope"])
    for result in (shown, compared, recommended, history):
        assert result.returncode == 0, result.stderr
    for result in (shown, compared, recommended, history, refused):
        assert_terminal_safe(result.stdout + result.stderr)
    assert row_of(shown.stdout, f"local/{SHOWN}/onnxruntime  ok ")
    cell = f"local/{SHOWN}/onnxruntime/fp32/t1/call/s1"
    assert row_of(compared.stdout, cell).split()[1] in {"unchanged", "faster", "slower"}
    assert f"for {SHOWN} on local" in recommended.stdout
    assert row_of(history.stdout, run_id).endswith(cell)
    assert row_of(history.stdout, second).endswith(cell)
    assert refused.returncode == 2 and refused.stderr.strip().endswith(f"it has: {SHOWN}")
