"""The runner's output, typed: ``RunResult``, the ``edgebench.result/1`` object a runner prints
after ``RESULT_PREFIX`` (the sibling of spec.py's ``RunSpec``, its input).

This is the one definition of the result's fields. The Python runner writes its result through
it, the host reads every runner's result with ``RunResult.from_json``, and ``json_schema()``
derives from it the JSON Schema that edgebench-native's output is checked against
(``edgebench runners schema`` prints it).

Runs on the device: Python 3.8+, standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from . import ERROR_KINDS, RESULT_SCHEMA, STATUSES
from .result_parts import (
    AcceleratorPart,
    GenerationPart,
    InputEntry,
    InstancesPart,
    NvidiaPart,
    OpProfilePart,
    OutputSummary,
    ResultError,
    ShapeChangePart,
    StagesPart,
    TelemetryPart,
)
from .typed_json import ALWAYS, document_schema, read_object, write_object

#: What a reader calls the object in its messages (``result.samples_ns[3] must be ...``).
NAME = "result"


@dataclass
class RunResult:
    """One cell's result: a header every runner writes (null where the cell never got that
    far), then the parts a cell fills when it has them."""

    schema: str
    #: One of protocol.STATUSES; ``error`` says why when it is not ``ok``.
    status: str
    error: Optional[ResultError] = field(default=None, metadata=ALWAYS)
    # What the spec asked for, as it came.
    framework: Optional[str] = field(default=None, metadata=ALWAYS)
    framework_version: Optional[str] = field(default=None, metadata=ALWAYS)
    model: Optional[str] = field(default=None, metadata=ALWAYS)
    precision: Optional[str] = field(default=None, metadata=ALWAYS)
    threads: Optional[int] = field(default=None, metadata=ALWAYS)
    concurrency: Optional[int] = field(default=None, metadata=ALWAYS)
    cores_requested: Optional[List[int]] = field(default=None, metadata=ALWAYS)
    cores_effective: Optional[List[int]] = field(default=None, metadata=ALWAYS)
    #: The Python runner's interpreter; edgebench-native writes null and names itself instead.
    python: Optional[str] = field(default=None, metadata=ALWAYS)
    runner: Optional[str] = None
    runner_version: Optional[str] = None
    pid: Optional[int] = field(default=None, metadata=ALWAYS)
    # Resident memory (KiB) after the framework's import and at the peak; times in ns.
    rss_before_load_kb: Optional[int] = field(default=None, metadata=ALWAYS)
    peak_rss_kb: Optional[int] = field(default=None, metadata=ALWAYS)
    load_ns: Optional[int] = field(default=None, metadata=ALWAYS)
    first_inference_ns: Optional[int] = field(default=None, metadata=ALWAYS)
    warmup_samples_ns: List[int] = field(default_factory=list, metadata=ALWAYS)
    #: The timed window: one sample per inference, the window's wall time and why it ended.
    samples_ns: List[int] = field(default_factory=list, metadata=ALWAYS)
    measure_wall_ns: Optional[int] = field(default=None, metadata=ALWAYS)
    stop_reason: Optional[str] = field(default=None, metadata=ALWAYS)
    inputs: Optional[List[InputEntry]] = field(default=None, metadata=ALWAYS)
    input_generator: Optional[str] = field(default=None, metadata=ALWAYS)
    outputs: Optional[List[OutputSummary]] = field(default=None, metadata=ALWAYS)
    nvidia: Optional[NvidiaPart] = None
    instances: Optional[InstancesPart] = None
    shape_change: Optional[ShapeChangePart] = None
    accelerator: Optional[AcceleratorPart] = None
    telemetry: Optional[TelemetryPart] = None
    #: Several streams: timed inferences per stream, the most in flight at once.
    per_stream_counts: Optional[List[int]] = None
    at_once: Optional[int] = None
    cpu_ns_per_inference: Optional[int] = None
    #: With a CI target: the median's confidence-interval half-width, relative.
    median_ci: Optional[float] = None
    stages: Optional[StagesPart] = None
    outputs_file: Optional[str] = None
    #: With an evaluation set: how many samples ran and where their outputs are.
    eval_samples: Optional[int] = None
    eval_outputs_file: Optional[str] = None
    op_profile: Optional[OpProfilePart] = None
    #: A generative cell's tests (its ``samples_ns`` are per-token decode latencies).
    generation: Optional[GenerationPart] = None

    @classmethod
    def from_json(cls, obj: Any) -> RunResult:
        """The result in the decoded JSON ``obj``; one ValueError naming the first bad field
        (a wrong type, a required key missing, an unknown status or error kind). Keys an
        older runner did not write keep their defaults; keys this one does not know are
        dropped."""
        result = read_object(cls, obj, NAME)
        if result.schema != RESULT_SCHEMA:
            raise ValueError("%s.schema is %r, not %r" % (NAME, result.schema, RESULT_SCHEMA))
        if result.status not in STATUSES:
            raise ValueError("%s.status %r is none of %s" % (NAME, result.status, STATUSES))
        if result.error is not None and result.error.kind not in ERROR_KINDS:
            raise ValueError("%s.error.kind %r is not an error kind" % (NAME, result.error.kind))
        return result

    def to_json(self) -> Dict[str, Any]:
        """The result as its JSON object: the header, then each part that holds something
        (or that the object read held)."""
        return write_object(self)

    @classmethod
    def header(cls, spec: Any, python: Optional[str], pid: Optional[int]) -> RunResult:
        """A failed result with nothing measured, its header from the spec object (as it
        came: a value of the wrong type is left out, so a malformed spec still gets a
        result that reads back)."""
        spec = spec if isinstance(spec, dict) else {}

        def given(key: str, kind: type, default: Any = None) -> Any:
            value = spec.get(key, default)
            fits = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
            return value if fits else None

        cores = given("cores", list)
        if cores is not None and not all(type(c) is int for c in cores):
            cores = None
        return cls(
            schema=RESULT_SCHEMA,
            status="failed",
            framework=given("framework", str),
            model=given("model", str),
            precision=given("precision", str, "fp32"),
            threads=given("threads", int),
            concurrency=given("concurrency", int, 1),
            cores_requested=cores,
            python=python,
            pid=pid,
        )


def json_schema() -> Dict[str, Any]:
    """The JSON Schema of ``edgebench.result/1``, derived from ``RunResult`` and its parts:
    what every runner must write (the header keys required, no key the parts do not name)."""
    schema = document_schema(RunResult, RESULT_SCHEMA)
    properties = schema["properties"]
    properties["schema"]["const"] = RESULT_SCHEMA
    properties["status"]["enum"] = list(STATUSES)
    schema["$defs"][ResultError.__name__]["properties"]["kind"]["enum"] = list(ERROR_KINDS)
    return schema
