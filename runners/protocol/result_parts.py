"""The parts of a runner result (run_result.py), each a small dataclass whose fields are its JSON
keys, mirroring the record part the host makes of it (edgebench/results/): raw nanoseconds and
kilobytes here, the record's milliseconds and megabytes there.

Runs on the device: Python 3.8+, standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .typed_json import ALWAYS


@dataclass
class ResultError:
    """Why the cell did not measure: one of protocol.ERROR_KINDS, a message for people, and the
    traceback or stderr tail behind it."""

    kind: str
    message: str
    detail: Optional[str] = None


@dataclass
class InputEntry:
    """One model input as the cell fed it."""

    name: str
    shape: List[int]
    dtype: str
    #: ``file`` when the host's input file gave it (else seeded, see ``input_generator``).
    source: Optional[str] = None


@dataclass
class OutputSummary:
    """Enough of one output to compare runs and frameworks without shipping the tensor."""

    name: str
    shape: List[int]
    dtype: str
    nonfinite: Optional[int] = None
    mean: Optional[float] = None
    std: Optional[float] = None
    min: Optional[float] = None
    max: Optional[float] = None
    l2: Optional[float] = None
    argmax: Optional[int] = None
    top5: Optional[List[int]] = None
    sample_stride: Optional[int] = None
    #: Every ``sample_stride``-th value (null where it was not finite).
    sample: Optional[List[Optional[float]]] = None


@dataclass
class InstancesPart:
    """Several instances at once (record: ``Instances``): resident memory in KiB after each
    was loaded, with one and with all running; how many ran and were in flight at once."""

    count: int
    mode: str
    rss_after_load_kb: Optional[List[Optional[int]]] = None
    device_memory_after_load_mb: Optional[List[Optional[float]]] = None
    rss_one_running_kb: Optional[int] = None
    rss_running_kb: Optional[int] = None
    ran: Optional[int] = None
    at_once: Optional[int] = None


@dataclass
class ShapeChangePart:
    """A shape change (record: ``ShapeVariant.change``): the shape it came from, the resize
    and the first inference after it."""

    from_: Optional[List[Dict[str, Any]]] = field(default=None, metadata={"key": "from"})
    resize_ns: Optional[int] = None
    first_ns: Optional[int] = None


@dataclass
class StagesPart:
    """Per-stage samples of the timed window and what each stage covers (record: ``Stages``),
    or only why there are none."""

    samples_ns: Optional[Dict[str, List[int]]] = None
    boundaries: Optional[Dict[str, str]] = None
    unavailable: Optional[str] = None


@dataclass
class ProfiledOpPart:
    """One node of an operator profile: mean time per profiled iteration, calls per one."""

    name: Optional[str] = None
    type: Optional[str] = None
    impl: Optional[str] = None
    time_ms: Optional[float] = None
    count: Optional[int] = None


@dataclass
class OpProfilePart:
    """``--profile ops`` (record: ``OpProfile``), or only why there is none."""

    iterations: Optional[int] = None
    source: Optional[str] = None
    ops: Optional[List[ProfiledOpPart]] = None
    total_ms: Optional[float] = None
    inference_ms: Optional[float] = None
    unavailable: Optional[str] = None


@dataclass
class AcceleratorPart:
    """The device an accelerator backend ran on and what it did there (record:
    ``AcceleratorRun``, where each field is described)."""

    api: str
    device: Optional[str] = None
    device_type: Optional[str] = None
    software: Optional[bool] = None
    driver: Optional[str] = None
    api_version: Optional[str] = None
    precision: Optional[str] = None
    delegated_ops: Optional[int] = None
    total_ops: Optional[int] = None
    device_memory_mb: Optional[float] = None
    device_memory_unavailable: Optional[str] = None
    stages_note: Optional[str] = None
    engine_build_ms: Optional[float] = None
    engine_cache: Optional[str] = None
    cuda_graph: Optional[bool] = None
    placement: Optional[Dict[str, int]] = None


@dataclass
class NvidiaPart:
    """The NVIDIA GPU, driver and libraries, the process's GPU memory and the window's clock
    and load (record: ``NvidiaState``, where each field is described)."""

    source: Optional[str] = None
    gpu: Optional[str] = None
    uuid: Optional[str] = None
    type: Optional[str] = None
    compute_capability: Optional[str] = None
    memory_mb: Optional[float] = None
    driver: Optional[str] = None
    cuda_driver: Optional[str] = None
    cuda_runtime: Optional[str] = None
    cudnn: Optional[str] = None
    tensorrt: Optional[str] = None
    gpu_memory_mb: Optional[float] = None
    gpu_memory_source: Optional[str] = None
    sm_clock_mhz: Optional[Dict[str, float]] = None
    sm_clock_max_mhz: Optional[float] = None
    load_pct: Optional[Dict[str, float]] = None
    samples: Optional[int] = None
    power_mode: Optional[str] = None
    power_mode_id: Optional[int] = None
    clocks_locked: Optional[bool] = None
    clocks_source: Optional[str] = None
    l4t: Optional[str] = None
    jetpack: Optional[str] = None
    unavailable: Optional[Dict[str, str]] = None


@dataclass
class TelemetryPart:
    """The raw trace sampled over the cell (``edgebench.telemetry/1``; record:
    ``TelemetryTrace``, docs/energy.md). Its series run index for index with ``t_perf_ns``."""

    schema: Optional[str] = None
    source: Optional[Dict[str, Any]] = None
    period_s: Optional[float] = None
    samples: Optional[int] = None
    t_perf_ns: Optional[List[int]] = None
    t_mono_ns: Optional[List[int]] = None
    power_w: Optional[List[Optional[float]]] = None
    energy_j: Optional[List[Optional[float]]] = None
    charging: Optional[List[Optional[bool]]] = None
    wrapped_at: Optional[List[int]] = None
    max_energy_range_j: Optional[float] = None
    freq_khz: Optional[Dict[str, List[Optional[int]]]] = None
    temp_c: Optional[Dict[str, List[Optional[float]]]] = None
    marks: Optional[Dict[str, int]] = None
    truncated: Optional[bool] = None
    sample_cost_us: Optional[float] = None
    baseline: Optional[Dict[str, Any]] = None
    errors: Optional[List[str]] = None
    state_before: Optional[Dict[str, Any]] = None
    state_after: Optional[Dict[str, Any]] = None
    cooldown: Optional[Dict[str, Any]] = None
    governor: Optional[Dict[str, Any]] = None


@dataclass
class PrefillRun:
    """One prefill test: its prompt length and the time to first token of each repetition."""

    prompt_tokens: int
    ttft_ns: List[int] = field(default_factory=list)


@dataclass
class GenerationPart:
    """A generative cell's tests (runners/generation.py says what each times). The decode
    test's per-token latencies are the header's ``samples_ns``; its CPU time per token is
    ``cpu_ns_per_inference``."""

    #: The weight type that ran (``f16``, ``q8_0``, ``q4_0`` or the runtime's own name).
    weight_type: str
    gen_tokens: int
    context_depth: int
    prefill: List[PrefillRun] = field(default_factory=list)
    #: Per decode repetition: first token to last token.
    decode_wall_ns: List[int] = field(default_factory=list)
    #: The KV cache's size as the runtime reports it.
    kv_cache_bytes: Optional[int] = field(default=None, metadata=ALWAYS)
    #: The output check's greedy tokens.
    check_tokens: List[int] = field(default_factory=list)
    #: Each timed prefill repetition's [start, first token] and each decode repetition's
    #: [first token, last token], in the order run, on the telemetry sampler's clock
    #: (``time.perf_counter_ns``): the spans the host integrates energy over.
    prefill_spans_ns: List[List[int]] = field(default_factory=list)
    decode_spans_ns: List[List[int]] = field(default_factory=list)
