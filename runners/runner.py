#!/usr/bin/env python3
"""edgebench on-device runner: one JSON spec in, one JSON result out.

Usage:
    python3 runner.py SPEC.json        (or "-" to read the spec from stdin)
    python3 runner.py '{"schema": ...}' (the spec itself, as one argument)
    python3 runner.py --probe          (which frameworks this device can run)

Self-contained on purpose: Python 3.8+, the standard library, numpy and the framework under test.
It imports nothing from the host package: runner.py, protocol.py (what host and runner share),
telemetry.py and backends/ are copied to a phone or a board and run there. The result is the
last line on stdout, prefixed with ``RESULT_PREFIX``; anything the framework prints goes to
stderr (stdout is redirected during the run so native logging cannot corrupt the result).
"""

from __future__ import annotations

import importlib
import json
import math
import os
import platform
import sys
import threading
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from backends import MODULE_SUFFIX, Backend, BackendError, Declaration, discover
from backends.base import InputSpec, Stream
from backends.tensors import (
    INPUT_GENERATOR,
    fit_sample,
    load_inputs,
    make_inputs,
    save_outputs,
    summarize_outputs,
)
from emulation import boot_id
from emulation import detect as detect_emulation
from instances import open_streams
from protocol import (
    PROBE_SCHEMA,
    RESULT_PREFIX,
    RESULT_SCHEMA,
    SPEC_SCHEMA,
    install_hint,
    parse_cpu_list,
    status_of,
)

SPEC_DEFAULTS = {
    "precision": "fp32",
    "threads": 1,
    "cores": None,
    "warmup": 10,
    "iterations": 100,
    "min_time_s": 2.0,
    "max_iterations": 100000,
    "max_time_s": 120.0,
    "concurrency": 1,
    "inputs": None,
    "seed": 0,
    "options": {},
    "save_outputs": None,  # path of an .npz to write the full outputs to (for the output check)
    # Path of an .npz with one array per input name (the host's --input, prepared there): fed
    # to the framework instead of the seeded inputs; None: seeded inputs.
    "input_file": None,
    # Quantized cells: an .npz whose arrays stack evaluation samples on a leading axis; after
    # the timed loop each sample is run once and the stacked outputs are written to
    # save_eval_outputs (the host compares them with fp32 ONNX Runtime).
    "eval_file": None,
    "save_eval_outputs": None,
    # Energy/thermal/frequency sampling beside the timed loop, or None for none:
    # {"energy_source": "auto"|kind|"none", "period_s": 0.05, "baseline_s": 1.0,
    #  "zones": [thermal zone types], "root": sysfs root (default $EDGEBENCH_SYSFS_ROOT or "/"),
    #  "sync_marker": file created while the timed window runs (for external power meters),
    #  "cooldown_temp_c": wait before the cell until the hottest zone is below this,
    #  "cooldown_max_wait_s": ... but no longer than this,
    #  "set_governor": e.g. "performance" for the pinned cores, restored after the cell}
    "telemetry": None,
    # Keep sampling until the 95% CI of the median is within +-target_ci (a fraction), or
    # max_time_s / max_iterations stop it; None: iterations + min_time_s decide.
    "target_ci": None,
    # Time copy-in, compute and copy-out of each iteration separately (one stream only).
    "stages": True,
    # After the timed window: N inferences of a separate profiling instance, per operator.
    "profile_ops": 0,
    # N instances of the model in this process, "separate" loads or "shared" weights; the
    # host sets concurrency to N as well.
    "instances": 1,
    "instance_mode": "separate",
    # Inputs of another shape: one inference at those first, then the resize to "inputs"
    # is timed (dynamic-shape artifacts; the first inference after it is recorded apart).
    "shape_change_from": None,
}


# --- process facts ---------------------------------------------------------------------------


def read_proc_status() -> Dict[str, str]:
    fields = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
    except OSError:
        pass
    return fields


def status_kb(fields: Dict[str, str], key: str) -> Optional[int]:
    value = fields.get(key)
    if not value:
        return None
    try:
        return int(value.split()[0])
    except ValueError:
        return None


def peak_rss_kb() -> Optional[int]:
    hwm = status_kb(read_proc_status(), "VmHWM")
    if hwm is not None:
        return hwm
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    except (ImportError, OSError):
        return None


def effective_cores() -> Optional[List[int]]:
    """The affinity the kernel actually applied, as reported in /proc/self/status."""
    allowed = read_proc_status().get("Cpus_allowed_list")
    if allowed:
        try:
            return parse_cpu_list(allowed)
        except ValueError:
            pass  # not the kernel's syntax: ask the scheduler instead
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return None


def apply_affinity(cores: Optional[Sequence[int]]) -> None:
    if not cores:
        return
    if not hasattr(os, "sched_setaffinity"):
        raise BackendError("pinning", "this platform cannot pin threads to cores")
    try:
        os.sched_setaffinity(0, set(int(c) for c in cores))
    except (OSError, ValueError) as exc:
        raise BackendError("pinning", "could not pin to cores %s: %s" % (list(cores), exc)) from exc


# --- timing ----------------------------------------------------------------------------------


def median_ci_halfwidth(samples: List[int]) -> float:
    """Half-width of a distribution-free 95% CI of the median, relative to the median.

    Uses the order statistics at n/2 -/+ 1.96 sqrt(n)/2 (normal approximation to the binomial).
    """
    ordered = sorted(samples)
    n = len(ordered)
    spread = 1.96 * (n**0.5) / 2
    lo = max(0, int(n / 2 - spread))
    hi = min(n - 1, int(n / 2 + spread + 1))
    median = ordered[n // 2]
    return (ordered[hi] - ordered[lo]) / 2 / median if median else float("inf")


def measure_sequential(
    run: Callable[[], Any],
    iterations: int,
    min_time_ns: int,
    max_iterations: int,
    max_time_ns: int,
    target_ci: Optional[float] = None,
    last_outputs: Optional[List[Any]] = None,
    stage_samples: Optional[Dict[str, List[int]]] = None,
) -> Dict[str, Any]:
    """Time ``run`` until at least ``iterations`` samples AND ``min_time_ns`` have passed.

    ``last_outputs``, when given, receives what the last timed call returned: the outputs the
    check compares, without one more inference (which costs seconds on an emulated board).

    ``stage_samples``, when given (``run`` is then a ``Stream``), receives each iteration's
    copy-in, compute and copy-out times: the clock is read between the stages, so the three
    add up to exactly the iteration's sample, which still covers the whole inference.

    With ``target_ci`` (e.g. 0.01 for +-1%) it goes on until the 95% CI of the median is that
    tight, or ``max_time_ns``/``max_iterations`` stop it. The timer brackets the inference call
    only; bookkeeping (including the CI check) happens outside it.
    """
    clock = time.perf_counter_ns
    samples: List[int] = []
    append = samples.append
    stop_reason = "max_iterations"
    next_check = max(iterations, 20)
    ci = None
    start = clock()
    outputs = None
    if stage_samples is not None:
        copy_in, compute, copy_out = run.copy_in, run.compute, run.copy_out  # type: ignore
        add_in = stage_samples.setdefault("copy_in", []).append
        add_compute = stage_samples.setdefault("compute", []).append
        add_out = stage_samples.setdefault("copy_out", []).append
    while len(samples) < max_iterations:
        if stage_samples is None:
            t0 = clock()
            outputs = run()
            t1 = clock()
        else:
            t0 = clock()
            copy_in()
            ta = clock()
            compute()
            tb = clock()
            outputs = copy_out()
            t1 = clock()
            add_in(ta - t0)
            add_compute(tb - ta)
            add_out(t1 - tb)
        append(t1 - t0)
        elapsed = t1 - start
        enough = len(samples) >= iterations and elapsed >= min_time_ns
        if enough and target_ci is None:
            stop_reason = "target_reached"
            break
        if enough and len(samples) >= next_check:
            # Re-checked at growing intervals so sorting stays a small share of the run.
            ci = median_ci_halfwidth(samples)
            if ci <= target_ci:
                stop_reason = "ci_reached"
                break
            next_check = len(samples) + max(16, len(samples) // 10)
        if elapsed >= max_time_ns:
            stop_reason = "max_time"
            break
    wall = clock() - start
    if last_outputs is not None and samples:
        last_outputs.append(outputs)
    result = {"samples_ns": samples, "measure_wall_ns": wall, "stop_reason": stop_reason}
    if target_ci is not None:
        result["median_ci"] = median_ci_halfwidth(samples) if samples else None
    return result


def measure_concurrent(
    streams: List[Callable[[], Any]],
    iterations: int,
    min_time_ns: int,
    max_iterations: int,
    max_time_ns: int,
) -> Dict[str, Any]:
    """Run every stream in its own thread; per-request latency plus aggregate throughput.

    The window ends once ``iterations`` requests and ``min_time_ns`` have passed and every
    stream has finished a request (so N instances are N running, not the first few), or at
    ``max_time_ns``/``max_iterations``. ``at_once`` is the most requests in flight together.
    """
    clock = time.perf_counter_ns
    barrier = threading.Barrier(len(streams) + 1)
    stop = threading.Event()
    lock = threading.Lock()
    per_stream: List[List[int]] = [[] for _ in streams]
    completion: List[int] = []  # stream index of every finished request, in order
    state = {"start": 0, "reason": "max_iterations", "error": None}
    # Requests in flight now and at most; streams that started and that finished a request.
    flight = {"now": 0, "most": 0, "started": 0, "ran": 0}
    # Set once every stream has started its first request: until then no stream starts a
    # second one, so the first streams cannot keep the others from ever running.
    all_started = threading.Event()

    def halt() -> None:
        stop.set()
        all_started.set()  # wakes the streams waiting for it

    def worker(index: int, run: Callable[[], Any]) -> None:
        samples = per_stream[index]
        barrier.wait()
        start = state["start"]
        try:
            while not stop.is_set():
                if samples and not all_started.is_set():
                    left = max_time_ns - (clock() - start)
                    if left <= 0 or not all_started.wait(left / 1e9):
                        state["reason"] = "max_time"
                        halt()
                    if stop.is_set():
                        break
                with lock:
                    flight["now"] += 1
                    flight["most"] = max(flight["most"], flight["now"])
                    if not samples:
                        flight["started"] += 1
                        if flight["started"] == len(streams):
                            all_started.set()
                t0 = clock()
                run()
                t1 = clock()
                samples.append(t1 - t0)
                with lock:
                    flight["now"] -= 1
                    completion.append(index)
                    done = len(completion)
                    if len(samples) == 1:
                        flight["ran"] += 1
                    every = flight["ran"] == len(streams)
                elapsed = t1 - start
                if done >= iterations and elapsed >= min_time_ns and every:
                    state["reason"] = "target_reached"
                    halt()
                elif done >= max_iterations:
                    halt()
                elif elapsed >= max_time_ns:
                    state["reason"] = "max_time"
                    halt()
        except Exception as exc:  # surfaced by the main thread as an inference error
            state["error"] = exc
            halt()

    threads = [
        threading.Thread(target=worker, args=(i, run), daemon=True) for i, run in enumerate(streams)
    ]
    for thread in threads:
        thread.start()
    state["start"] = clock()
    barrier.wait()
    for thread in threads:
        thread.join()
    wall = clock() - state["start"]
    if state["error"] is not None:
        raise state["error"]
    cursors = [0] * len(streams)
    samples = []
    for index in completion:
        samples.append(per_stream[index][cursors[index]])
        cursors[index] += 1
    return {
        "samples_ns": samples,
        "measure_wall_ns": wall,
        "stop_reason": state["reason"],
        "per_stream_counts": [len(s) for s in per_stream],
        "at_once": flight["most"],
    }


# --- backends --------------------------------------------------------------------------------


def load_backend(framework: str) -> Backend:
    """Instantiate the backend for ``framework`` or raise BackendError with a clear kind.

    Backends are found by listing backends/ (backends/__init__.py says what each declares).
    """
    found, broken = discover()
    declared = found.get(framework)
    if declared is None:
        message = "unknown framework %r" % framework
        if broken:
            message += " (unreadable backend modules: %s)" % "; ".join(
                "%s: %s" % item for item in sorted(broken.items())
            )
        raise BackendError("bad_spec", message)
    return instantiate(declared)


def instantiate(declared: Declaration) -> Backend:
    """The backend a module declares, once one of the modules it requires imports."""
    framework = declared.framework
    if declared.native_only or declared.backend is None:
        raise BackendError("unsupported", declared.native_only or "%s has no backend" % framework)
    errors = []
    for candidate in declared.requires:
        try:
            importlib.import_module(candidate)
            break
        except ImportError as exc:
            errors.append(str(exc))
    else:
        hint = install_hint(declared.pip_extra) if declared.pip_extra else "no pip package"
        raise BackendError(
            "not_installed",
            "%s is not installed on this device (%s)" % (framework, hint),
            "; ".join(errors),
        )
    return declared.backend()


# --- the run ---------------------------------------------------------------------------------


def normalize_spec(raw: Any) -> Dict[str, Any]:
    if not isinstance(raw, dict):
        raise BackendError("bad_spec", "the spec must be a JSON object")
    if raw.get("schema") != SPEC_SCHEMA:
        raise BackendError(
            "bad_spec", "spec schema %r is not %r" % (raw.get("schema"), SPEC_SCHEMA)
        )
    for key in ("model", "framework"):
        if not isinstance(raw.get(key), str) or not raw.get(key):
            raise BackendError("bad_spec", "spec field %r must be a non-empty string" % key)
    spec = dict(SPEC_DEFAULTS)
    spec.update(raw)
    for key in (
        "threads",
        "warmup",
        "iterations",
        "max_iterations",
        "concurrency",
        "seed",
        "instances",
        "profile_ops",
    ):
        if not isinstance(spec[key], int) or spec[key] < 0:
            raise BackendError("bad_spec", "spec field %r must be a non-negative integer" % key)
    if min(spec["threads"], spec["concurrency"], spec["max_iterations"], spec["instances"]) < 1:
        raise BackendError(
            "bad_spec", "threads, concurrency, max_iterations and instances must be >= 1"
        )
    if spec["instances"] > 1 and spec["concurrency"] != spec["instances"]:
        raise BackendError("bad_spec", "with several instances, concurrency must equal them")
    for key in ("min_time_s", "max_time_s"):
        if not isinstance(spec[key], (int, float)) or spec[key] < 0:
            raise BackendError("bad_spec", "spec field %r must be a non-negative number" % key)
    return spec


def resolve_inputs(spec: Dict[str, Any], model_inputs: List[InputSpec]) -> List[InputSpec]:
    requested = spec.get("inputs")
    if not requested:
        return model_inputs
    by_name = {item["name"]: item for item in requested}
    resolved = []
    for model_input in model_inputs:
        item = by_name.get(model_input.name)
        if item is None:
            resolved.append(model_input)
            continue
        resolved.append(
            InputSpec(model_input.name, item["shape"], item.get("dtype") or model_input.dtype)
        )
    unknown = sorted(set(by_name) - {i.name for i in model_inputs})
    if unknown:
        raise BackendError(
            "bad_spec",
            "inputs %s are not inputs of the model (it has %s)"
            % (unknown, [i.name for i in model_inputs]),
        )
    return resolved


class Telemetry:
    """Energy source, idle baseline and the sampler around the timed window."""

    def __init__(self, config: Dict[str, Any], cores: Optional[List[int]]) -> None:
        import telemetry

        self.tm = telemetry
        self.root = config.get("root") or os.environ.get("EDGEBENCH_SYSFS_ROOT") or "/"
        self.period_s = float(config.get("period_s") or 0.05)
        self.zones = config.get("zones") or None
        self.cores = cores
        self.marker = config.get("sync_marker")
        try:
            self.source = telemetry.make_source(config.get("energy_source") or "auto", self.root)
        except telemetry.TelemetryUnavailable as exc:
            self.source = telemetry.NoneSource({str(config.get("energy_source")): str(exc)})
        # Idle power before the model loads: the process is as quiet as it will ever be.
        self.baseline = None
        baseline_s = float(config.get("baseline_s") or 0.0)
        if baseline_s > 0 and self.source.kind != "none":
            self.baseline = telemetry.idle_baseline(self.source, baseline_s, self.period_s)
        self.governors = self._set_governor(config.get("set_governor"))
        self.cooldown = self._cool_down(
            config.get("cooldown_temp_c"), float(config.get("cooldown_max_wait_s") or 0.0)
        )
        self.before = telemetry.read_state(self.root, cores, self.zones)
        self.sampler = None

    def _cpus(self) -> List[int]:
        return list(self.cores) if self.cores else self.tm.list_cpus(self.root)

    def _set_governor(self, wanted: Optional[str]) -> Optional[Dict[str, Any]]:
        """Switch the cell's cores to ``wanted``; the previous governors are restored later."""
        if not wanted:
            return None
        report: Dict[str, Any] = {"wanted": wanted, "previous": {}, "errors": []}
        for cpu in self._cpus():
            path = self.tm.cpufreq_path(self.root, cpu, "scaling_governor")
            try:
                with open(path) as fh:
                    previous = fh.read().strip()
                if previous != wanted:
                    with open(path, "w") as fh:
                        fh.write(wanted)
                report["previous"][str(cpu)] = previous
            except OSError as exc:
                report["errors"].append(
                    "cpu%d: cannot set governor (%s); needs root on the device"
                    % (cpu, exc.strerror or exc)
                )
        return report

    def restore_governors(self) -> None:
        if not self.governors or self.governors.get("restored"):
            return
        for cpu, previous in self.governors["previous"].items():
            path = self.tm.cpufreq_path(self.root, int(cpu), "scaling_governor")
            try:
                with open(path, "w") as fh:
                    fh.write(previous)
            except OSError as exc:
                self.governors["errors"].append("cpu%s: could not restore: %s" % (cpu, exc))
        self.governors["restored"] = True

    def _hottest(self) -> Optional[float]:
        temps = self.tm.read_state(self.root, [], self.zones).get("temp_c") or {}
        values = [v for v in temps.values() if isinstance(v, (int, float))]
        return max(values) if values else None

    def _cool_down(self, limit: Optional[float], max_wait_s: float) -> Optional[Dict[str, Any]]:
        """Wait (bounded) until the hottest zone is below ``limit`` before the cell starts."""
        if limit is None:
            return None
        start = time.monotonic()
        first = current = self._hottest()
        while current is not None and current > limit and time.monotonic() - start < max_wait_s:
            time.sleep(min(0.5, max(0.0, max_wait_s - (time.monotonic() - start))))
            current = self._hottest()
        return {
            "limit_c": limit,
            "start_c": first,
            "end_c": current,
            "waited_s": round(time.monotonic() - start, 3),
            "reached": current is None or current <= limit,
        }

    def start_window(self) -> None:
        self.sampler = self.tm.Sampler(
            self.source, self.period_s, self.cores, self.zones, self.root, baseline=self.baseline
        ).start()
        if self.marker:
            with open(self.marker, "w") as fh:
                fh.write(str(os.getpid()))
        self.sampler.mark("window_start")

    def end_window(self) -> None:
        if self.sampler is not None:
            self.sampler.mark("window_end")
        if self.marker and os.path.exists(self.marker):
            os.unlink(self.marker)

    def trace(self) -> Optional[Dict[str, Any]]:
        if self.sampler is None:
            return None
        trace = self.sampler.stop()
        trace["state_before"] = self.before
        trace["state_after"] = self.tm.read_state(self.root, self.cores, self.zones)
        trace["cooldown"] = self.cooldown
        trace["governor"] = self.governors
        return trace


def run_spec(spec: Dict[str, Any], result: Dict[str, Any]) -> None:
    """Fill ``result`` in place, so a failure part-way still reports what was measured."""
    apply_affinity(spec["cores"])
    result["cores_effective"] = effective_cores()
    telemetry = Telemetry(spec["telemetry"], spec["cores"]) if spec.get("telemetry") else None
    try:
        _measure_cell(spec, result, telemetry)
    finally:
        if telemetry is not None:
            telemetry.restore_governors()  # also when the cell failed part-way


def _measure_cell(
    spec: Dict[str, Any], result: Dict[str, Any], telemetry: Optional[Telemetry]
) -> None:
    backend = load_backend(spec["framework"])
    result["framework_version"] = backend.version()
    # After the framework import, before the model: the model's own footprint is peak - this.
    result["rss_before_load_kb"] = rss_kb()
    if not os.path.isfile(spec["model"]):
        raise BackendError("model_load", "model file not found: %s" % spec["model"])

    options = dict(spec["options"] or {})
    separate = int(spec["instances"]) > 1 and spec["instance_mode"] == "separate"
    # Separate instances are N single-stream loads; otherwise one load serves every stream.
    options.setdefault("streams", 1 if separate else spec["concurrency"])
    t0 = time.perf_counter_ns()
    backend.load(spec["model"], spec["threads"], spec["precision"], options)
    result["load_ns"] = time.perf_counter_ns() - t0

    model_inputs = backend.model_inputs()
    inputs = resolve_inputs(spec, model_inputs)
    check_fixed_shapes(inputs, model_inputs, spec["model"])
    result["inputs"] = [i.as_dict() for i in inputs]
    if spec.get("input_file"):
        feeds = load_inputs(spec["input_file"], inputs)
        for entry in result["inputs"]:
            entry["source"] = "file"
    else:
        feeds = make_inputs(inputs, spec["seed"])

    def load_another() -> Backend:
        another = load_backend(spec["framework"])
        another.load(spec["model"], spec["threads"], spec["precision"], options)
        return another

    extra: List[Backend] = []
    try:
        change_from = spec.get("shape_change_from")
        if change_from:
            prior = resolve_inputs({"inputs": change_from}, model_inputs)
            t0 = time.perf_counter_ns()
            backend.make_stream(make_inputs(prior, spec["seed"]))()
            result["first_inference_ns"] = time.perf_counter_ns() - t0
            backend.reuse_streams()
        t0 = time.perf_counter_ns()
        streams, extra = open_streams(spec, backend, feeds, result, load_another, rss_kb)
        resize_ns = time.perf_counter_ns() - t0
        t0 = time.perf_counter_ns()
        outputs = streams[0]()
        first_ns = time.perf_counter_ns() - t0
        if "instances" in result:  # all loaded, one has run: the base of the running growth
            result["instances"]["rss_one_running_kb"] = rss_kb()
        if change_from:
            result["shape_change"] = {
                "from": change_from,
                "resize_ns": resize_ns,
                "first_ns": first_ns,
            }
        else:
            result["first_inference_ns"] = first_ns
        warmup: List[int] = []
        for run in streams:
            for _ in range(spec["warmup"]):
                t0 = time.perf_counter_ns()
                run()
                warmup.append(time.perf_counter_ns() - t0)
        result["warmup_samples_ns"] = warmup
        _timed_loop(spec, result, telemetry, streams)
        outputs = result.pop("_last_outputs", None) or streams[0]()
        if "instances" in result:
            result["instances"]["rss_running_kb"] = rss_kb()
            # How many of the N took part: finished a timed request, and were in flight at once.
            counts = result.get("per_stream_counts") or []
            result["instances"]["ran"] = sum(1 for c in counts if c)
            result["instances"]["at_once"] = result.get("at_once")
    except (BackendError, MemoryError):
        raise
    except Exception as exc:
        raise BackendError(
            "inference", "inference failed: %s" % exc, traceback.format_exc()
        ) from exc
    finally:
        for another in extra:
            another.close()

    names = backend.output_names()
    result["outputs"] = summarize_outputs(names, list(outputs))
    if spec.get("save_outputs"):
        save_outputs(spec["save_outputs"], names, list(outputs))
        result["outputs_file"] = spec["save_outputs"]
    if spec.get("eval_file") and spec.get("save_eval_outputs"):
        result["eval_samples"] = evaluate(
            backend, inputs, spec["eval_file"], spec["save_eval_outputs"]
        )
        result["eval_outputs_file"] = spec["save_eval_outputs"]
    # Before any profiling instance is loaded: the peak is the measured cell's own.
    result["peak_rss_kb"] = peak_rss_kb()
    if spec["profile_ops"]:
        result["op_profile"] = _profile_ops(spec, feeds)
    result["status"] = "ok"
    backend.close()


def _timed_loop(
    spec: Dict[str, Any],
    result: Dict[str, Any],
    telemetry: Optional[Telemetry],
    streams: List[Any],
) -> None:
    """The timed window: samples (and stages, with one stream) into ``result``."""
    min_ns = int(spec["min_time_s"] * 1e9)
    max_ns = int(spec["max_time_s"] * 1e9)
    staged = spec["stages"] and len(streams) == 1 and isinstance(streams[0], Stream)
    stage_samples: Optional[Dict[str, List[int]]] = {} if staged else None
    if telemetry is not None:
        telemetry.start_window()
    last: List[Any] = []
    try:
        if len(streams) == 1:
            timing = measure_sequential(
                streams[0],
                spec["iterations"],
                min_ns,
                spec["max_iterations"],
                max_ns,
                spec.get("target_ci"),
                last,
                stage_samples,
            )
        else:
            timing = measure_concurrent(
                streams, spec["iterations"], min_ns, spec["max_iterations"], max_ns
            )
    finally:
        if telemetry is not None:
            telemetry.end_window()
            result["telemetry"] = telemetry.trace()
    result.update(timing)
    if last:
        result["_last_outputs"] = last[0]
    if stage_samples is not None:
        result["stages"] = {"samples_ns": stage_samples, "boundaries": streams[0].boundaries}
    elif spec["stages"]:
        why = "%d streams ran at once; stages are timed with one" % len(streams)
        if len(streams) == 1:
            why = "the %s backend runs an inference as one call" % spec["framework"]
        result["stages"] = {"unavailable": why}


def _profile_ops(spec: Dict[str, Any], feeds: Dict[str, Any]) -> Dict[str, Any]:
    """Per-operator times from a separate profiling instance, after the timed window."""
    import shutil
    import tempfile

    import op_profile

    workdir = tempfile.mkdtemp(prefix="edgebench-ops-")
    try:
        return op_profile.profile_ops(
            spec["framework"],
            spec["model"],
            spec["threads"],
            spec["precision"],
            feeds,
            int(spec["profile_ops"]),
            workdir,
        )
    except Exception as exc:  # a profiler failure never costs the cell its timed result
        return {"unavailable": "profiling failed: %s: %s" % (type(exc).__name__, exc)}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def check_fixed_shapes(
    inputs: List[InputSpec], model_inputs: List[InputSpec], model_path: str
) -> None:
    """Refuse inputs whose shape a fixed-shape artifact was not converted for: frameworks
    would otherwise fail deep inside or, worse, run on misread memory."""
    fixed = {i.name: i.shape for i in model_inputs}
    for wanted in inputs:
        have = fixed.get(wanted.name)
        if not have or len(have) != len(wanted.shape):
            continue
        if any(h > 0 and h != w for h, w in zip(have, wanted.shape)):
            raise BackendError(
                "bad_spec",
                "%s has a fixed input %s of shape %s, not %s: convert it for that shape, or "
                "use a dynamic artifact (--shape-mode dynamic)"
                % (os.path.basename(model_path), wanted.name, have, wanted.shape),
            )


def rss_kb() -> Optional[int]:
    return status_kb(read_proc_status(), "VmRSS")


def evaluate(backend: Backend, inputs: List[InputSpec], eval_file: str, target: str) -> int:
    """Run every sample of ``eval_file`` once and save the outputs stacked the same way;
    returns how many samples ran."""
    import numpy as np

    try:
        with np.load(eval_file, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError) as exc:
        raise BackendError("bad_spec", "evaluation set %s: %s" % (eval_file, exc)) from None
    count = min(a.shape[0] for a in arrays.values()) if arrays else 0
    names = backend.output_names()
    collected: List[List[Any]] = [[] for _ in names]
    for index in range(count):
        sample = {name: a[index] for name, a in arrays.items()}
        try:
            feeds = fit_sample(sample, inputs, "evaluation sample %d" % index)
        except ValueError as exc:
            raise BackendError("bad_spec", "evaluation set: %s" % exc) from None
        try:
            outputs = backend.make_stream(feeds)()
        except (BackendError, MemoryError):
            raise
        except Exception as exc:
            raise BackendError(
                "inference", "evaluation sample %d failed: %s" % (index, exc)
            ) from exc
        for slot, output in zip(collected, outputs):
            slot.append(np.array(output, copy=True))
    save_outputs(target, names, [np.stack(slot) for slot in collected])
    return count


def new_result(spec: Any) -> Dict[str, Any]:
    spec = spec if isinstance(spec, dict) else {}
    return {
        "schema": RESULT_SCHEMA,
        "status": "failed",
        "error": None,
        "framework": spec.get("framework"),
        "framework_version": None,
        "model": spec.get("model"),
        "precision": spec.get("precision", "fp32"),
        "threads": spec.get("threads"),
        "concurrency": spec.get("concurrency", 1),
        "cores_requested": spec.get("cores"),
        "cores_effective": None,
        "python": platform.python_version(),
        "pid": os.getpid(),
        "rss_before_load_kb": None,
        "peak_rss_kb": None,
        "load_ns": None,
        "first_inference_ns": None,
        "warmup_samples_ns": [],
        "samples_ns": [],
        "measure_wall_ns": None,
        "stop_reason": None,
        "inputs": None,
        "input_generator": INPUT_GENERATOR,
        "outputs": None,
    }


def execute(raw_spec: Any) -> Dict[str, Any]:
    result = new_result(raw_spec)
    try:
        spec = normalize_spec(raw_spec)
        result.update(new_result(spec))
        run_spec(spec, result)
    except BackendError as exc:
        result["status"] = status_of(exc.kind)
        result["error"] = {"kind": exc.kind, "message": exc.message, "detail": exc.detail[-4000:]}
    except MemoryError as exc:
        result["status"] = "failed"
        result["error"] = {
            "kind": "out_of_memory",
            "message": "out of memory on the device (%s); use a smaller input or batch, "
            "or free memory" % (str(exc) or "MemoryError"),
            "detail": traceback.format_exc()[-4000:],
        }
    except Exception as exc:
        result["status"] = "failed"
        result["error"] = {
            "kind": "internal",
            "message": "runner error: %s: %s" % (type(exc).__name__, exc),
            "detail": traceback.format_exc()[-4000:],
        }
    if result.get("peak_rss_kb") is None:
        result["peak_rss_kb"] = peak_rss_kb()
    return result


def probe() -> Dict[str, Any]:
    found, broken = discover()
    frameworks: Dict[str, Dict[str, Any]] = {}
    for name, declared in found.items():
        try:
            backend = instantiate(declared)
            frameworks[name] = {"available": True, "version": backend.version()}
        except BackendError as exc:
            frameworks[name] = {"available": False, "reason": exc.kind, "message": exc.message}
        except Exception as exc:  # a framework that crashes on import is unavailable, not fatal
            frameworks[name] = {"available": False, "reason": "import_error", "message": str(exc)}
    for module_name, message in broken.items():  # named after its file: FRAMEWORK was unreadable
        name = module_name[: -len(MODULE_SUFFIX)]
        unreadable = {"available": False, "reason": "import_error", "message": message}
        frameworks.setdefault(name, unreadable)
    try:
        numpy_version = importlib.import_module("numpy").__version__
    except ImportError:
        numpy_version = None
    emulated, evidence = detect_emulation()
    return {
        "schema": PROBE_SCHEMA,
        "python": platform.python_version(),
        "numpy": numpy_version,
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "affinity": effective_cores(),
        "frameworks": frameworks,
        "emulated": emulated,
        "emulation": evidence,
        "boot_id": boot_id(),
    }


def json_safe(value: Any) -> Any:
    """``value`` with every NaN or infinite float as None: JSON has no such numbers, and a
    result line the host cannot read strictly would lose the whole measurement."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        sys.stderr.write(__doc__ or "")
        return 2
    # Keep the real stdout for the result; send everything else (native logs too) to stderr.
    result_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if argv[0] == "--probe":
        payload = probe()
    else:
        try:
            if argv[0] == "-":
                raw = json.load(sys.stdin)
            elif argv[0].lstrip().startswith("{"):
                raw = json.loads(argv[0])
            else:
                with open(argv[0]) as fh:
                    raw = json.load(fh)
        except (OSError, ValueError) as exc:
            raw = None
            payload = new_result(None)
            payload["error"] = {"kind": "bad_spec", "message": "cannot read spec: %s" % exc}
        else:
            payload = execute(raw)
    sys.stderr.flush()
    with os.fdopen(result_fd, "w") as out:
        line = json.dumps(json_safe(payload), separators=(",", ":"))
        out.write(RESULT_PREFIX + line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
