#!/usr/bin/env python3
"""How far are the frameworks' ARM kernels from ONNX Runtime on x86? The figures behind the
output check's per-precision rule (docs/converters.md, "fp16 on ARM").

Runs every built-in model (or --models) on the emulated arm64 board (edgebench.lab.
emulated_board; built on first use) over a real sshd chrooted into it, through `edgebench run`
with one iteration, and prints per model, framework and precision the output check's figures
against ONNX Runtime on this x86 host: max abs diff, relative L2, 1 - cosine, top-1, the rule's
ratio (<= 1 passes) and the verdict. It reports; it does not judge (exit status 0).

Usage: python benchmarks/arm_output_error.py [--models mobilenetv2,detector]
           [--frameworks ncnn,mnn,openvino,tflite,onnxruntime] [--precision fp32,fp16]
Needs root, qemu-user-static, binfmt-support, mmdebstrap and openssh-server (see .ci/run);
without them it prints one line saying what is missing and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the chrooted sshd the tests use

from fakes.arm_board import board_lab_entry  # noqa: E402
from fakes.ssh_fixtures import start_sshd  # noqa: E402

from edgebench.lab import emulated_board  # noqa: E402
from edgebench.models import BUILTIN_MODELS  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(BUILTIN_MODELS))
    parser.add_argument("--frameworks", default="ncnn,mnn,openvino,tflite,onnxruntime")
    parser.add_argument("--precision", default="fp32,fp16")
    args = parser.parse_args()
    started = time.monotonic()
    problem = emulated_board.build_problem()
    if problem:
        print(f"arm_output_error: needs a machine that can emulate aarch64; here: {problem}")
        return 2
    status = emulated_board.build_board(progress=lambda m: print(f"board: {m}", flush=True))
    if status.state != "installed" or status.root is None:
        print(f"the board did not build: {status.detail}")
        return 1
    with tempfile.TemporaryDirectory(prefix="eb-arm-error-") as tmp:
        folder = Path(tmp)
        server = start_sshd(folder / "sshd", chroot=status.root)
        inside = f"/data/local/tmp/eb-bench-{os.getpid()}"  # the device lock goes in here
        work = f"{inside}/work"
        try:
            lab = folder / "lab.toml"
            lab.write_text(board_lab_entry("arm-board", work, server=server))
            results = folder / "results"
            env = dict(os.environ, EDGEBENCH_RESULTS=str(results))
            command = [
                sys.executable, "-m", "edgebench", "run", "--lab", str(lab),
                "--devices", "arm-board", "--models", args.models,
                "--frameworks", args.frameworks, "--precision", args.precision,
                "--iterations", "1", "--warmup", "0",
            ]  # fmt: skip
            proc = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        finally:
            server.stop()
            shutil.rmtree(status.root / inside.lstrip("/"), ignore_errors=True)
        records = [
            json.loads(line)
            for path in results.glob("*/records.jsonl")
            for line in path.read_text().splitlines()
            if line.strip()
        ]
    if not records:
        print(f"no records; edgebench exited {proc.returncode}:\n{proc.stderr[-3000:]}")
        return 1
    print(f"board: {status.info.get('frameworks')}, {status.info.get('qemu')}")
    header = ("model", "framework", "prec", "max abs diff", "rel L2", "1-cos", "top-1", "ratio")
    print("  ".join(f"{h:<12}" for h in (*header, "verdict")))
    for r in sorted(records, key=lambda r: (r["model"], r["framework"], r["precision"])):
        check = r.get("output_check") or {}
        if not check or check.get("problem"):
            why = check.get("problem") or (r.get("error") or "")[:70]
            row: tuple[object, ...] = (r["model"], r["framework"], r["precision"], r["status"], why)
            print("  ".join(f"{v:<12}" for v in row))
            continue
        cosine = check.get("cosine")
        figures = (
            f"{check['max_abs_diff']:.3g}",
            f"{check['rel_error']:.2e}",
            f"{1 - cosine:.1e}" if cosine is not None else "-",
            f"{check['top1_agreement']:.2f}" if check.get("top1_agreement") is not None else "-",
            f"{check['ratio']:.3g}" if check.get("ratio") is not None else "-",
        )
        row = (r["model"], r["framework"], r["precision"], *figures, r["status"])
        print("  ".join(f"{v:<12}" for v in row))
    print(f"total {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
