"""edgebench's own .tflite files on real aarch64: three built-in models run in the emulated
arm64 board's tflite-runtime 2.14 (the last tflite-runtime release, older than the LiteRT on
the host) and match ONNX Runtime on this host at the fp32 output check's tolerance."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
from fakes.arm_board import BOARD_PYTHON

from edgebench.converters.tflite.convert import convert_model
from edgebench.lab import emulated_board
from edgebench.models import build_model

# ResNet-50's operators are a subset of these; under qemu it took a minute of this test alone.
BUILTINS = ("mobilenetv2", "vit-tiny", "detector")

# Runs inside the board: every model in tflite_runtime, outputs saved beside the inputs.
_BOARD_SCRIPT = """
import json, sys
import numpy as np
import tflite_runtime
from tflite_runtime.interpreter import Interpreter
folder = sys.argv[1]
for name in json.load(open(folder + "/names.json")):
    it = Interpreter(model_path=folder + "/" + name + ".tflite", num_threads=1)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], np.load(folder + "/" + name + ".in.npy"))
    it.invoke()
    np.save(folder + "/" + name + ".out.npy", it.get_tensor(it.get_output_details()[0]["index"]))
print("tflite_runtime", tflite_runtime.__version__)
"""


def test_builtin_tflite_files_run_in_tflite_runtime_on_arm(
    arm_board: Path, board_work_dir: str
) -> None:
    folder = arm_board / board_work_dir.lstrip("/")
    folder.mkdir(parents=True)
    references = {}
    for name in BUILTINS:
        model = build_model(name)
        converted = convert_model(model, {}, "fp32")
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
        (folder / f"{name}.tflite").write_bytes(converted.flatbuffer)
        np.save(folder / f"{name}.in.npy", np.ascontiguousarray(np.transpose(x, (0, 2, 3, 1))))
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        references[name] = (
            session.run(None, {model.graph.input[0].name: x})[0],
            converted.outputs[0].perm,
        )
    (folder / "names.json").write_text(json.dumps(list(BUILTINS)))

    run = emulated_board.run_in_board(
        arm_board, [BOARD_PYTHON, "-c", _BOARD_SCRIPT, board_work_dir], timeout=900
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "tflite_runtime 2.14" in run.stdout

    for name, (want, perm) in references.items():
        got = np.load(folder / f"{name}.out.npy")
        if perm:
            got = np.transpose(got, np.argsort(perm))
        bound = 1e-3 * (np.abs(want) + np.abs(want).max()) + 1e-5
        assert got.shape == want.shape, name
        assert (np.abs(got - want) <= bound).all(), (name, float(np.abs(got - want).max()))
