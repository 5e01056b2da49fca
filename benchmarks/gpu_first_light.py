#!/usr/bin/env python3
"""First light on a real GPU: ncnn and MNN on Vulkan through `edgebench run`, each cell's output
checked against ONNX Runtime on the CPU, with ncnn's own benchncnn (gpu_device 0) beside them.

Two steps, because the GPU machine has no network:

  pack (here)   python benchmarks/gpu_first_light.py pack --python-version 3.12
                    --benchncnn-source benchncnn.cpp
                builds .gpu_kit/ (see gpu_first_light_kit.py): wheels, edgebench-native with
                Vulkan, benchncnn, the Vulkan loader; small enough to travel with the tree.
  run (there)   python3 benchmarks/gpu_first_light.py run --kit .gpu_kit --out "$OUT"
                installs the kit offline (pip --no-index into a folder of its own), then runs
                `edgebench run` twice on the machine itself, as two lab devices: gpu-python
                (runners/runner.py with the ncnn wheel: ncnn·vulkan) and gpu-native
                (edgebench-native: ncnn·vulkan and mnn·vulkan), on mobilenetv2, resnet50 and
                vit-tiny at fp32 and fp16, then benchncnn on the same ncnn files.

It prints the device and driver, and per cell: the output check, p50, first inference, the
upload / compute / download medians, CPU milliseconds per inference, device memory (Vulkan's
VK_EXT_memory_budget, where the driver has it) and, for ncnn at fp16, the ratio to benchncnn
(which always runs ncnn at fp16). The table, the records and the log are written to --out.

On a machine without a GPU the same `run` is the dry run: Mesa's lavapipe stands in (give
--models mobilenetv2 --iterations 5 there; the software device is slow). Exit status: 0 when
every cell ran and passed its output check, 1 otherwise, 2 when the kit or the machine is not
ready (one line says what to do).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import lzma
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from pathlib import Path

# Only the standard library above: `run` starts before edgebench is installed.

REPO = Path(__file__).resolve().parent.parent
MODELS = "mobilenetv2,resnet50,vit-tiny"
PRECISIONS = "fp32,fp16"
#: Where NVIDIA's container images mount the driver's Vulkan manifest.
NVIDIA_ICDS = (
    "/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json",
    "/usr/share/vulkan/icd.d/nvidia_icd.json",
    "/etc/vulkan/icd.d/nvidia_icd.json",
)
DEVICES = {
    # lab name: (runner, frameworks)
    "gpu-python": ("python", "ncnn"),
    "gpu-native": ("edgebench-native", "ncnn,mnn"),
}
STAGES = ("copy_in", "compute", "copy_out")


class NotReady(Exception):
    """The kit or the machine is missing something; the message says what to do."""


def say(line: str) -> None:
    print(line, flush=True)


def unxz(source: Path, target: Path, mode: int = 0o644) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(source) as src, target.open("wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    target.chmod(mode)
    return target


def rezip_wheels(kit: Path, work: Path) -> list[Path]:
    """The kit's unpacked wheels as .whl files again (a wheel is a zip of its files)."""
    unpacked, wheels = work / "unpacked", work / "wheels"
    with tarfile.open(kit / "wheels.tar.xz") as archive:
        archive.extractall(unpacked, filter="data")
    wheels.mkdir(parents=True, exist_ok=True)
    made = []
    for folder in sorted(p for p in unpacked.iterdir() if p.is_dir()):
        target = wheels / f"{folder.name}.whl"
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as wheel:
            for file in sorted(folder.rglob("*")):
                if file.is_file():
                    wheel.write(file, file.relative_to(folder))
        made.append(target)
    return made


def install_wheels(kit: Path, work: Path) -> Path | None:
    """The kit's wheels installed offline into ``work/site``; None for a kit packed without
    them (--no-download: the running environment has the packages)."""
    if not (kit / "wheels.tar.xz").exists():
        say("the kit has no wheels: using this environment's edgebench, ncnn and MNN")
        return None
    facts = json.loads((kit / "kit.json").read_text())
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    if facts["python"] != running:
        raise NotReady(
            f"the kit's wheels are for Python {facts['python']}, this is {running}: "
            f"pack it again with --python-version {running}"
        )
    wheels = rezip_wheels(kit, work)
    site = work / "site"
    say(f"installing {len(wheels)} wheels (edgebench's among them) into {site}, offline")
    pip = [
        sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
        "--no-cache-dir", "--disable-pip-version-check", "--target", str(site),
    ]  # fmt: skip
    done = subprocess.run([*pip, *map(str, wheels)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise NotReady(f"pip install failed: {done.stderr.strip()[-600:]}")
    return site


def place_native(kit: Path, work: Path) -> Path:
    """The kit's edgebench-native build, laid out as EDGEBENCH_NATIVE_DIR expects."""
    native = work / "native"
    for packed in (kit / "native").rglob("*"):
        if packed.is_file():
            placed = native / packed.relative_to(kit / "native")
            if packed.suffix == ".xz":
                unxz(packed, placed.with_suffix(""), 0o755)
            else:
                placed.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(packed, placed)
    return native


def install(kit: Path, work: Path) -> dict[str, str]:
    """The kit unpacked under ``work``; the environment `edgebench` runs in."""
    site = install_wheels(kit, work)
    env = dict(os.environ)
    env["EDGEBENCH_NATIVE_DIR"] = str(place_native(kit, work))
    if site is not None:
        env.update(
            PYTHONPATH=os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")])),
            PATH=os.pathsep.join([str(site / "bin"), env.get("PATH", "")]),
            EDGEBENCH_TOOLCHAINS_DIR=str(work / "toolchains"),
            PIP_NO_INDEX="1",
            PIP_FIND_LINKS=str(work / "wheels"),
        )
        sys.path.insert(0, str(site))  # benchncnn's adapter is edgebench's, from the kit
    return env


def loads(library: str) -> bool:
    """Whether the dynamic loader finds ``library``, as ncnn's and MNN's dlopen will."""
    try:
        ctypes.CDLL(library)
    except OSError:
        return False
    return True


def vulkan_environment(kit: Path, work: Path, env: dict[str, str]) -> list[str]:
    """The loader from the kit where the machine has none, and NVIDIA's ICD where the loader
    would not find it by itself; lines saying what was done."""
    said = []
    if not loads("libvulkan.so.1") and (kit / "lib" / "libvulkan.so.1.xz").exists():
        unxz(kit / "lib" / "libvulkan.so.1.xz", work / "lib" / "libvulkan.so.1")
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            filter(None, [str(work / "lib"), env.get("LD_LIBRARY_PATH")])
        )
        said.append("Vulkan loader: the kit's (the machine has none)")
    searched = ("/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d")
    has_icd = any(Path(folder).glob("*.json") for folder in searched)
    chosen = next((icd for icd in NVIDIA_ICDS if Path(icd).is_file()), None)
    if chosen and not env.get("VK_DRIVER_FILES") and chosen.startswith("/usr/local/"):
        env["VK_DRIVER_FILES"] = chosen
        said.append(f"Vulkan driver: VK_DRIVER_FILES={chosen}")
    elif not has_icd and not env.get("VK_DRIVER_FILES"):
        said.append("Vulkan driver: no ICD manifest found; cells will say there is no device")
    return said


def edgebench(env: dict[str, str], *args: str, log: Path, timeout: float) -> str:
    """`python -m edgebench ARGS`, killed after ``timeout`` s: its progress lines printed as
    they come, all of its stderr in ``log``; its stdout returned."""
    with log.open("a") as err, tempfile.TemporaryFile("w+") as stdout:
        err.write(f"\n$ edgebench {' '.join(args)}\n")
        proc = subprocess.Popen(
            [sys.executable, "-m", "edgebench", *args],
            env=env,
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
        )
        killer = threading.Timer(timeout, proc.kill)
        killer.start()
        try:
            assert proc.stderr is not None  # stderr=PIPE
            for line in proc.stderr:  # ends when the process does, or is killed
                err.write(line)
                if line.startswith("[") or "error" in line:
                    say(f"  {line.rstrip()}")
            proc.wait()
        finally:
            killer.cancel()
        if proc.returncode == -signal.SIGKILL:
            say(f"  (edgebench {args[0]} stopped after {timeout:.0f} s)")
        stdout.seek(0)
        return stdout.read()


def measure(args: argparse.Namespace, env: dict[str, str], work: Path, log: Path) -> list[dict]:
    lab = work / "lab.toml"
    lab.write_text(
        "".join(
            f'[devices.{name}]\ntransport = "local"\nrunner = "{runner}"\nbackends = ["vulkan"]\n'
            for name, (runner, _) in DEVICES.items()
        )
    )
    records = []
    deadline = time.monotonic() + args.budget_s
    for index, (device, (_, frameworks)) in enumerate(DEVICES.items()):
        # The Python runner's run (ncnn only) gets a third of what is left, the native one the rest.
        share = (deadline - time.monotonic()) / (3 if index == 0 else 1)
        say(f"{device}: {frameworks} on Vulkan, {args.models}, {args.precision}")
        out = edgebench(
            env, "run", "--lab", str(lab), "--devices", device, "--frameworks", frameworks,
            "--backends", "vulkan", "--models", args.models, "--precision", args.precision,
            "--threads", "1", "--warmup", str(args.warmup), "--iterations", str(args.iterations),
            "--min-time", str(args.min_time), "--max-time", str(args.max_time),
            "--format", "jsonl", "--results-dir", str(work / "results"),
            log=log, timeout=max(share, 30.0),
        )  # fmt: skip
        records += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return records


def benchncnn_ms(
    binary: Path, records: list[dict], env: dict[str, str], iterations: int
) -> dict[str, float | str]:
    """benchncnn's average per model (gpu_device 0, its fp16), on the ncnn files the native
    ncnn cells ran, or why there is none."""
    from edgebench.framework_tools import BenchncnnAdapter, ToolCell

    adapter = BenchncnnAdapter()
    found: dict[str, float | str] = {}
    for record in records:
        artifact = record.get("artifact") or {}
        if record["framework"] != "ncnn" or record["model"] in found or not artifact.get("path"):
            continue
        folder = Path(artifact["path"])
        io = json.loads((folder / "io.json").read_text())
        cell = ToolCell(
            model_path=str(folder / "model.param"),
            model_dir=str(folder),
            threads=1,
            warmup=0,
            iterations=iterations,
            precision="fp16",
            input_shapes={t["onnx_name"]: t["onnx_shape"] for t in io["inputs"]},
            backend="vulkan",
        )
        proc = subprocess.run(
            adapter.command(str(binary), cell), capture_output=True, text=True, env=env,
            timeout=600, cwd=folder,
        )  # fmt: skip
        try:
            parsed = adapter.parse(proc.stdout, proc.stderr, "", model_path=cell.model_path)
            if parsed.avg_ms is None:
                raise ValueError("it printed no average")
            found[record["model"]] = float(parsed.avg_ms)
        except Exception as exc:  # the tool's words are the finding here
            found[record["model"]] = f"benchncnn failed: {str(exc)[:120]}"
    return found


def figure(value: float | None, width: int = 8) -> str:
    return f"{value:>{width}.2f}" if isinstance(value, int | float) else f"{'-':>{width}}"


def table(records: list[dict], bench: dict[str, float | str]) -> list[str]:
    lines = []
    devices: set[str] = {
        str(r["accelerator"]["device"])
        for r in records
        if r.get("accelerator") and r["accelerator"].get("device")
    }
    for record in records:
        acc = record.get("accelerator") or {}
        if acc.get("device"):
            lines.append(
                f"device: {acc['device']} ({acc.get('api')} {acc.get('api_version')}, driver "
                f"{acc.get('driver')}{', software' if acc.get('software') else ''})"
            )
            break
    if len(devices) > 1:
        lines.append(f"(cells ran on several devices: {', '.join(sorted(devices))})")
    lines.append(
        f"{'runner':<11}{'model':<12}{'cell':<13}{'prec':<5}{'check':<10}{'p50':>8}{'first':>8}"
        f"{'up':>8}{'compute':>8}{'down':>8}{'cpu/inf':>8}{'dev MB':>8}{'/bench':>8}"
    )
    for r in records:
        acc = r.get("accelerator") or {}
        check = r.get("output_check") or {}
        verdict = (
            r["status"] if r["status"] != "ok"
            else "pass" if check.get("passed") else "FAIL" if check else "unchecked"
        )  # fmt: skip
        stages = (r.get("stages") or {}).get("p50_ms") or {}
        p50 = (r.get("latency_ms") or {}).get("p50")
        anchor = bench.get(r["model"])
        ratio = (
            p50 / anchor
            if r["framework"] == "ncnn" and r["precision"] == "fp16" and p50
            and isinstance(anchor, float) else None
        )  # fmt: skip
        runner = "native" if r["device"] == "gpu-native" else "python"
        on = acc.get("device") or ("CPU fallback" if r["status"] == "ok" else "")
        cell = f"{r['framework']}·{r.get('backend')}"
        lines.append(
            f"{runner:<11}{r['model']:<12}{cell:<13}{r['precision']:<5}{verdict:<10}"
            f"{figure(p50)}{figure(r.get('first_inference_ms'))}"
            + "".join(figure(stages.get(stage)) for stage in STAGES)
            + f"{figure(r.get('cpu_ms_per_inf'))}{figure(acc.get('device_memory_mb'))}"
            + f"{figure(ratio)}"
            + (f"  [{on}]" if (on and len(devices) > 1) or on == "CPU fallback" else "")
        )
        if r["status"] != "ok" and r.get("error"):
            lines.append(f"{'':<11}{str(r['error'])[:150]}")
    for model, value in bench.items():
        shown = f"{value:.2f} ms" if isinstance(value, float) else value
        lines.append(f"benchncnn {model} (gpu_device 0, fp16, average): {shown}")
    lines.append(
        "(milliseconds: p50 and stage medians; first inference; cpu/inf: CPU time per "
        "inference; dev MB: VK_EXT_memory_budget's usage; /bench: edgebench's p50 over "
        "benchncnn's average)"
    )
    return lines


def gpu_tests(env: dict[str, str], out: Path, timeout: float) -> list[str]:
    """The suite's tests marked `gpu`, run here: pytest's summary (each skip names what is
    missing: no TensorRT, no onnxruntime-gpu)."""
    marked = sorted(
        str(path.relative_to(REPO))
        for path in (REPO / "tests").rglob("test_*.py")
        if "mark.gpu" in path.read_text()
    )
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-m", "gpu", "-p", "no:cacheprovider"]
    try:
        done = subprocess.run(
            [*command, *marked], cwd=REPO, env=env, capture_output=True, text=True,
            timeout=timeout,
        )  # fmt: skip
        output = done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        # TimeoutExpired keeps the output as bytes, whatever text= said.
        said = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        output = f"{said}\n(pytest stopped after {timeout:.0f} s)"
    (out / "gpu_tests.txt").write_text(output)
    tail = [line for line in output.splitlines() if line.startswith(("SKIPPED", "FAILED", "ERROR"))]
    summary = [line for line in output.splitlines() if " passed" in line or " skipped" in line]
    return [f"tests marked gpu ({', '.join(marked)}):", *tail, *summary[-1:]]


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    kit, work = Path(args.kit).resolve(), Path(args.work).resolve()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if not (kit / "kit.json").is_file():
        raise NotReady(f"no kit at {kit}: run `python benchmarks/gpu_first_light.py pack` here")
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    log = out / "first_light.log"
    log.write_text("")
    env = install(kit, work)
    for line in vulkan_environment(kit, work, env):
        say(line)
    say(f"ready in {time.monotonic() - started:.0f} s; the ncnn toolchain (pnnx), offline")
    edgebench(env, "toolchains", "install", "ncnn", log=log, timeout=300)
    records = measure(args, env, work, log)
    (out / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    bench: dict[str, float | str] = {}
    if (kit / "benchncnn.xz").exists():
        binary = unxz(kit / "benchncnn.xz", work / "benchncnn", 0o755)
        bench = benchncnn_ms(binary, records, env, args.iterations)
    lines = table(records, bench)
    if args.gpu_tests:
        lines += gpu_tests(env, out, timeout=args.tests_budget_s)
    lines.append(f"({len(records)} cells, {time.monotonic() - started:.0f} s in all)")
    (out / "first_light.txt").write_text("\n".join(lines) + "\n")
    say("")
    for line in lines:
        say(line)
    expected = len(args.models.split(",")) * len(args.precision.split(",")) * 3
    good = [r for r in records if (r.get("output_check") or {}).get("passed")]
    if len(good) != expected:
        say(f"{len(good)} of {expected} cells ran and passed their output check")
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    packing = verbs.add_parser("pack", help="build .gpu_kit here (needs the package client)")
    packing.add_argument("--kit", default=str(REPO / ".gpu_kit"))
    packing.add_argument("--python-version", default="3.12", help="the GPU machine's Python")
    packing.add_argument("--benchncnn-source", type=Path, help="ncnn's benchmark/benchncnn.cpp")
    packing.add_argument(
        "--no-download", dest="download", action="store_false",
        help="no wheels: for a dry run in an environment that has the packages",
    )  # fmt: skip
    running = verbs.add_parser("run", help="install the kit and measure (on the GPU machine)")
    running.add_argument("--kit", default=str(REPO / ".gpu_kit"))
    running.add_argument("--work", default="/tmp/edgebench-first-light")
    running.add_argument("--out", default=os.environ.get("OUT") or "/tmp/edgebench-first-light-out")
    running.add_argument("--models", default=MODELS)
    running.add_argument("--precision", default=PRECISIONS)
    running.add_argument("--warmup", type=int, default=10)
    running.add_argument("--iterations", type=int, default=100)
    running.add_argument("--min-time", type=float, default=1.0)
    running.add_argument("--max-time", type=float, default=10.0)
    running.add_argument(
        "--budget-s", type=float, default=330.0, help="the longest the two `edgebench run`s take"
    )
    running.add_argument(
        "--no-gpu-tests", dest="gpu_tests", action="store_false",
        help="leave out the suite's tests marked gpu",
    )  # fmt: skip
    running.add_argument("--tests-budget-s", type=float, default=90.0)
    args = parser.parse_args()
    try:
        if args.verb == "pack":
            from gpu_first_light_kit import pack

            return pack(Path(args.kit), args.python_version, args.benchncnn_source, args.download)
        return run(args)
    except NotReady as exc:
        say(f"gpu_first_light: {exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
