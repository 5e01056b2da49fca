"""Per-operator profiles on the device (``--profile ops``), through each framework's own API.

Runs on the device: Python 3.8+, stdlib + numpy + the framework only. Each profile loads its own
instance of the model, so profiled inferences never reach the timed samples. One untimed
inference comes first; then ``iterations`` profiled ones, each timed around the call.

The result has protocol/op_profile.py's shape (docs/profiling.md), or is
``{"unavailable": "<why>"}``; it never raises.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import tempfile
import time
from typing import Any, Callable, Dict, List, Tuple

from .protocol.op_profile import Event, profile_result, summarize

#: Frameworks whose Python API has no per-operator timer.
UNAVAILABLE = {
    "ncnn": "ncnn's Python wheel has no per-layer timer (needs a source build with NCNN_BENCHMARK)",
    "tflite": "LiteRT's Python interpreter has no op profiler; "
    'use the framework tool benchmark_model (runner = "framework-tools" in the lab entry)',
    "tnn": "TNN has no Python runtime; its TNNTest prints no per-layer times "
    "(needs a build with TNN_PROFILER_ENABLE)",
}


def profile_ops(
    framework: str,
    model_path: str,
    threads: int,
    precision: str,
    feeds: Dict[str, Any],
    iterations: int,
    workdir: str,
) -> Dict[str, Any]:
    """The per-operator profile of ``iterations`` inferences of ``model_path`` on ``feeds``
    (ONNX input names -> arrays in the ONNX layout), or ``{"unavailable": why}``."""
    profiler = _PROFILERS.get(framework)
    if profiler is None:
        reason = UNAVAILABLE.get(framework, "%s has no per-operator profiler here" % framework)
        return {"unavailable": reason}
    try:
        return profiler(
            model_path, int(threads), precision, feeds, max(1, int(iterations)), workdir
        )
    except Exception as exc:  # a framework's own exception types; the cell must go on
        return {"unavailable": "%s profiling failed: %s" % (framework, _reason(framework, exc))}


def _timed(run: Callable[[], Any], iterations: int, collect: Callable[[], None]) -> List[int]:
    """Wall time of each of ``iterations`` calls of ``run``; ``collect`` runs after each,
    outside the timed span."""
    wall = []
    for _ in range(iterations):
        start = time.perf_counter_ns()
        run()
        wall.append(time.perf_counter_ns() - start)
        collect()
    return wall


def _onnxruntime(
    model_path: str,
    threads: int,
    precision: str,
    feeds: Dict[str, Any],
    iterations: int,
    workdir: str,
) -> Dict[str, Any]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    so.enable_profiling = True
    # A folder of its own: ORT creates the trace file even when loading the model fails.
    folder = tempfile.mkdtemp(prefix="ort-profile-", dir=workdir)
    try:
        so.profile_file_prefix = os.path.join(folder, "trace")
        session = ort.InferenceSession(
            model_path, sess_options=so, providers=["CPUExecutionProvider"]
        )
        names = [o.name for o in session.get_outputs()]
        try:
            session.run(names, feeds)  # the untimed first inference
            wall = _timed(lambda: session.run(names, feeds), iterations, lambda: None)
        finally:
            trace_path = session.end_profiling()
        with open(trace_path) as handle:
            trace = json.load(handle)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return summarize(
        "onnxruntime SessionOptions.enable_profiling", iterations, _ort_events(trace), wall
    )


def _ort_events(trace: List[Dict[str, Any]]) -> List[Event]:
    """The kernel events after the first ``model_run`` (the untimed first inference): ORT
    profiles every run of the session, from its creation on."""
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in trace if e.get("name") == "model_run")
    if not runs:
        raise RuntimeError("no model_run events in ONNX Runtime's profile")
    after_first = runs[0][1]
    suffix = "_kernel_time"
    return [
        (
            e["name"][: -len(suffix)],
            e["args"].get("op_name", "?"),
            e["args"].get("provider"),
            e["dur"] * 1000,
        )
        for e in trace
        if e.get("cat") == "Node" and e.get("name", "").endswith(suffix) and e["ts"] >= after_first
    ]


def _openvino(
    model_path: str,
    threads: int,
    precision: str,
    feeds: Dict[str, Any],
    iterations: int,
    workdir: str,
) -> Dict[str, Any]:
    import openvino as ov

    backend = _backend("openvino_backend")
    if precision not in backend._PRECISION_HINT:
        raise ValueError("no %s on OpenVINO's CPU plugin" % precision)
    core = ov.Core()
    config = dict(backend.compile_config(threads, precision), PERF_COUNT=True)
    compiled = core.compile_model(core.read_model(model_path), "CPU", config)
    request = compiled.create_infer_request()
    for name, value in feeds.items():
        request.set_tensor(name, ov.Tensor(value))
    request.infer()  # the untimed first inference
    first = _ov_counters(request)
    wall = _timed(request.infer, iterations, lambda: None)
    # real_time is each node's running mean over every inference the compiled model has run,
    # the first one included, and its counters are shared by all its requests (a new request
    # resets nothing). After the first inference the mean is that one call; after 1 + N it
    # is their total over 1 + N, so the N timed calls took mean * (1 + N) - first.
    ops = [
        {
            "name": name,
            "type": op_type,
            "impl": impl,
            "time_ms": max(0, mean_us * (iterations + 1) - first.get(name, ("", "", 0))[2])
            / iterations
            / 1000.0,
            "count": 1,
        }
        for name, (op_type, impl, mean_us) in _ov_counters(request).items()
    ]
    inference_ms = sum(wall) / len(wall) / 1e6
    return profile_result("openvino PERF_COUNT get_profiling_info", iterations, ops, inference_ms)


def _ov_counters(request: Any) -> Dict[str, Tuple[str, Any, int]]:
    """node -> (type, exec type, mean microseconds per call so far) of the nodes that ran."""
    counters = {}
    for info in request.get_profiling_info():
        status = getattr(info.status, "name", str(info.status))
        if status.endswith(("NOT_RUN", "OPTIMIZED_OUT")):
            continue
        counters[info.node_name] = (info.node_type, info.exec_type, _us(info.real_time))
    return counters


def _us(delta: Any) -> int:
    """A ``datetime.timedelta`` in whole microseconds (OpenVINO's resolution)."""
    return (delta.days * 86400 + delta.seconds) * 1000000 + delta.microseconds


def _mnn(
    model_path: str,
    threads: int,
    precision: str,
    feeds: Dict[str, Any],
    iterations: int,
    workdir: str,
) -> Dict[str, Any]:
    import MNN
    import numpy as np

    mnn_backend = _backend("mnn_backend")
    if precision not in mnn_backend._PRECISION:
        raise ValueError("no %s in MNN" % precision)
    config = mnn_backend.session_config(threads, precision)
    interpreter = MNN.Interpreter(model_path)
    session = interpreter.createSession(config)
    if session is None:
        raise RuntimeError("MNN could not create a session for the model")
    events: List[Event] = []
    started: Dict[str, int] = {}

    def before(_tensors: Any, info: Any) -> bool:
        started[info.getName()] = time.perf_counter_ns()
        return True

    def after(_tensors: Any, info: Any) -> bool:
        end = time.perf_counter_ns()
        name = info.getName()
        events.append((name, info.getType(), config["backend"], end - started.pop(name, end)))
        return True

    def run() -> None:
        code = interpreter.runSessionWithCallBackInfo(session, before, after)
        if code not in (0, None):
            raise RuntimeError("runSessionWithCallBackInfo returned error code %s" % code)

    _mnn_feed(MNN, np, interpreter, session, feeds)
    run()  # the untimed first inference
    del events[:]
    wall = _timed(run, iterations, lambda: None)
    return summarize("MNN runSessionWithCallBackInfo", iterations, events, wall)


def _mnn_feed(mnn: Any, np: Any, interpreter: Any, session: Any, feeds: Dict[str, Any]) -> None:
    """Copy ``feeds`` (NCHW) into the session's inputs, resizing it first when a shape differs."""
    inputs = interpreter.getSessionInputAll(session)
    resized = False
    for name, value in feeds.items():
        if list(inputs[name].getShape()) != list(value.shape):
            interpreter.resizeTensor(inputs[name], tuple(value.shape))
            resized = True
    if resized:
        interpreter.resizeSession(session)
    for name, value in feeds.items():
        host = mnn.Tensor(
            tuple(value.shape),
            mnn.Halide_Type_Float,
            np.asarray(value, dtype=np.float32, order="C"),
            mnn.Tensor_DimensionType_Caffe,
        )
        inputs[name].copyFrom(host)


def _backend(name: str) -> Any:
    """A backend module of this package, imported when first needed."""
    return importlib.import_module(".backends." + name, __package__)


def _reason(framework: str, exc: BaseException) -> str:
    """The informative line of a framework's exception."""
    text = str(exc)
    if framework == "openvino":  # its messages start with where they were thrown
        try:
            return str(_backend("openvino_backend").reason_line(text))
        except ImportError:
            pass
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return type(exc).__name__


_PROFILERS: Dict[str, Callable[..., Dict[str, Any]]] = {
    "onnxruntime": _onnxruntime,
    "openvino": _openvino,
    "mnn": _mnn,
}
