"""What every framework-tool adapter shares: the cell and result types, the adapter interface,
shell quoting and the line cleaning and number parsing the output parsers rely on.

These adapters run on the host. They build the command line a device runs (over adb or ssh)
and parse what the tool printed; nothing here runs on the device.
"""

from __future__ import annotations

import math
import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import ClassVar, Self, cast

from edgebench.compute_backends import BACKEND_NAMES, CPU
from edgebench.device_shell import RECORD_PID_THEN_EXEC, taskset_mask

from .accelerator import BackendReport
from .generative import GenerativeWork, ToolGeneration
from .site import ToolSite

#: The precisions a ToolCell can hold; an adapter runs those of its ``precisions``.
PRECISIONS = ("fp32", "fp16", "int8")

#: A number as C/C++ tools print it: ``12``, ``12.5``, ``.5``, ``3.51239e+06``, ``1E-3``,
#: and the ``nan`` / ``-nan`` / ``inf`` that iostreams print for empty statistics.
NUMBER = r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|(?i:nan|inf(?:inity)?))"
_NUMBER_RE = re.compile(NUMBER, re.ASCII)

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]", re.ASCII)
#: The logcat prefixes :func:`clean_line` strips (the first that matches).
_LOGCAT_PREFIXES = tuple(
    re.compile(pattern, re.ASCII)
    for pattern in (
        # `logcat -v threadtime` (the default since Android 7), optionally with `-v year`:
        #   11-30 09:12:01.123  1234  1234 I tflite  : message
        r"^(?:\d{4}-)?\d\d-\d\d\s+\d\d:\d\d:\d\d(?:\.\d+)?\s+\d+\s+\d+\s+[VDIWEFAS]\s+[^:]*?\s*:\s?",
        # `logcat -v time`:  11-30 09:12:01.123 I/tflite  ( 1234): message
        r"^(?:\d{4}-)?\d\d-\d\d\s+\d\d:\d\d:\d\d(?:\.\d+)?\s+[VDIWEFAS]/[^:(]*(?:\(\s*\d+\))?\s*:\s?",
        # `logcat -v brief` (`I/tflite  ( 1234): message`) and TNN's own `I/tnn: message` prefix.
        r"^[VDIWEFAS]/[\w.$ -]*(?:\(\s*\d+\))?\s*:\s?",
    )
)
# TFLITE_LOG severities.
_SEVERITY_RE = re.compile(r"^(?:INFO|WARN|WARNING|ERROR|VERBOSE|DEBUG|FATAL):\s?", re.ASCII)

_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z", re.ASCII)


class ToolParseError(ValueError):
    """The tool's output lacks the line a result needs (or is not the tool's output at all).

    The message names the tool and the missing line.
    """

    def __init__(self, tool: str, missing: str, detail: str = "") -> None:
        message = f"{tool}: no {missing} in the output"
        if detail:
            message += f" ({detail})"
        super().__init__(message)
        self.tool = tool
        self.missing = missing
        self.detail = detail


@dataclass(frozen=True)
class ToolCell:
    """One benchmark cell as a native tool runs it on the device.

    ``model_path`` is the primary model file on the device (``.tflite``, ``.param``, ``.mnn``,
    ``.tnnproto``, ``.xml``); ``model_dir`` is the device folder holding all artifact files and
    the working directory of the run. ``input_shapes`` are ONNX-style (NCHW) shapes by input
    name, in the model's input order; each adapter converts them to its tool's convention.
    ``profile_ops`` asks the tools that can for their per-operator table (a separate run: it
    slows the timed inferences down). ``backend`` is the compute backend
    (edgebench/compute_backends.py): each adapter turns it into its tool's switch.
    ``cuda_graph`` asks a tool that can (trtexec) to replay the inference as a CUDA graph.
    ``generation`` is a generative cell's workload (its ``precision`` then the weight type).
    """

    model_path: str
    model_dir: str
    threads: int
    warmup: int
    iterations: int
    cores: list[int] | None = None
    precision: str = "fp32"
    input_shapes: dict[str, list[int]] = field(default_factory=dict)
    output_file: str | None = None
    profile_ops: bool = False
    backend: str = CPU
    #: The CUDA Graphs variant: the tool captures the inference once and replays it.
    cuda_graph: bool = False
    generation: GenerativeWork | None = None

    def __post_init__(self) -> None:
        for name in ("threads", "warmup", "iterations"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"ToolCell.{name} must be an int, got {value!r}")
        if self.threads < 1:
            raise ValueError(f"ToolCell.threads must be >= 1, got {self.threads}")
        if self.warmup < 0:
            raise ValueError(f"ToolCell.warmup must be >= 0, got {self.warmup}")
        if self.iterations < 1:
            raise ValueError(f"ToolCell.iterations must be >= 1, got {self.iterations}")
        if self.generation is None and self.precision not in PRECISIONS:
            raise ValueError(
                f"ToolCell.precision must be one of {PRECISIONS}, got {self.precision!r}"
            )
        if not self.model_path or not self.model_dir:
            raise ValueError("ToolCell.model_path and model_dir must not be empty")
        if self.cores is not None:
            taskset_mask(self.cores)  # validates
        if self.backend not in BACKEND_NAMES:
            raise ValueError(
                f"ToolCell.backend must be one of {BACKEND_NAMES}, got {self.backend!r}"
            )


@dataclass
class ToolResult:
    """What a native tool printed about one run, converted to milliseconds.

    A field is ``None`` when the tool did not print it; nothing is derived that the tool did not
    state (no percentiles from min/max/avg, no samples from aggregates). ``stats_available``
    names the fields that are set, in the order ``count, min, max, avg, median, p5, p95, std,
    samples, first, init, throughput, memory``. ``raw_lines`` are the cleaned lines the numbers
    were read from.
    """

    tool: str
    tool_version: str | None = None
    samples_ms: list[float] | None = None
    count: int | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    avg_ms: float | None = None
    median_ms: float | None = None
    p5_ms: float | None = None
    p95_ms: float | None = None
    std_ms: float | None = None
    first_ms: float | None = None
    init_ms: float | None = None
    throughput_ips: float | None = None
    memory_mb: float | None = None
    stats_available: tuple[str, ...] = ()
    raw_lines: list[str] = field(default_factory=list)
    #: Per inference, copy-in / compute / copy-out (ms), where the tool times them apart, and
    #: what each covers.
    stage_samples_ms: dict[str, list[float]] | None = None
    stage_boundaries: dict[str, str] | None = None
    #: A generative cell's figures (prefill and decode tokens/s, what the tool does not give).
    generation: ToolGeneration | None = None

    _STAT_FIELDS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("count", "count"),
        ("min", "min_ms"),
        ("max", "max_ms"),
        ("avg", "avg_ms"),
        ("median", "median_ms"),
        ("p5", "p5_ms"),
        ("p95", "p95_ms"),
        ("std", "std_ms"),
        ("samples", "samples_ms"),
        ("first", "first_ms"),
        ("init", "init_ms"),
        ("throughput", "throughput_ips"),
        ("memory", "memory_mb"),
    )

    def finish(self) -> Self:
        """Set ``stats_available`` from the fields that hold a value; returns ``self``."""
        self.stats_available = tuple(
            name for name, attr in self._STAT_FIELDS if getattr(self, attr) is not None
        )
        return self

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, (list, tuple)):
                value = list(value)
            elif isinstance(value, ToolGeneration):
                value = asdict(value)
            out[f.name] = value
        return out


def parse_number(text: str) -> float:
    """Parse one number as C/C++ tools print it (plain or scientific notation).

    Raises ``ValueError`` for anything else. ``nan`` and ``inf`` parse to the float values;
    use :func:`finite_or_none` to drop them.
    """
    stripped = text.strip()
    if not _NUMBER_RE.fullmatch(stripped):
        raise ValueError(f"not a number: {text!r}")
    return float(stripped)


def finite_or_none(text: str | None, scale: float = 1.0, divide_by: float = 1.0) -> float | None:
    """``parse_number(text) * scale / divide_by``, or ``None`` when absent, malformed, NaN or
    infinite. (Divide to convert µs to ms: 88213 / 1000 is 88.213, 88213 * 1e-3 is not.)"""
    if text is None:
        return None
    try:
        value = parse_number(text) * scale / divide_by
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def int_or_none(text: str | None) -> int | None:
    """A non-negative decimal integer of at most 18 digits, else ``None`` (never raises)."""
    if text is None:
        return None
    stripped = text.strip()
    if not stripped.isascii() or not stripped.isdigit() or len(stripped) > 18:
        return None
    return int(stripped)


def clean_line(line: str) -> str:
    """One output line without ANSI escapes, carriage returns, a logcat prefix
    (threadtime, time, brief or ``I/tag:``) and a ``INFO:``-style severity prefix."""
    text = _ANSI_RE.sub("", line).replace("\r", "").strip()
    for pattern in _LOGCAT_PREFIXES:
        stripped = pattern.sub("", text, count=1)
        if stripped != text:
            text = stripped.lstrip()
            break
    return _SEVERITY_RE.sub("", text, count=1).strip()


def clean_lines(text: str) -> list[str]:
    """:func:`clean_line` applied to every line of ``text``."""
    return [clean_line(line) for line in text.splitlines()]


def streams(stdout: str, stderr: str = "", logcat: str = "") -> list[list[str]]:
    """The cleaned lines of each non-empty stream, in the order stdout, stderr, logcat.

    Parsers look for a result in one stream at a time, so lines from different streams are never
    mixed up (the order of lines across streams is lost when they are captured separately).
    """
    return [clean_lines(text) for text in (stdout, stderr, logcat) if text]


def basename(path: str) -> str:
    """The last component of a device path (POSIX separators; a trailing slash is ignored)."""
    return posixpath.basename(path.rstrip("/")) or path


def label_matches(label: str, model_path: str) -> bool:
    """Whether a tool's result label names ``model_path`` (same path or same file name)."""
    label = label.strip()
    return label == model_path or basename(label) == basename(model_path)


@dataclass(kw_only=True, eq=False)
class ToolAdapter:
    """Builds one native tool's command line for a cell and parses its output.

    ``framework`` is the edgebench framework name, ``binary`` the tool's default file name (and,
    as :attr:`tool`, the name used in results and error messages) and ``result_line`` what a
    parse error says is missing. ``env`` adds environment assignments (e.g. ``LD_LIBRARY_PATH``)
    in front of the command in :meth:`shell_command`.

    Adapters are keyword-only dataclasses: a subclass declares its options as fields (with
    defaults) and checks them in ``__post_init__`` (calling ``super().__post_init__()``).
    """

    framework: ClassVar[str] = ""
    binary: ClassVar[str] = ""
    result_line: ClassVar[str] = ""
    #: logcat tag the tool logs its result under on Android (None: it prints to stdout/stderr).
    logcat_tag: ClassVar[str | None] = None
    #: False when the tool has no switch for the cell's precision (see the adapter's docs).
    controls_precision: ClassVar[bool] = True
    #: The cell precisions the adapter runs (trtexec adds int8: the QDQ model).
    precisions: ClassVar[tuple[str, ...]] = ("fp32", "fp16")

    #: Whether the tool is installed on the device (looked for there when the cell runs)
    #: rather than copied from the lab's ``tools_bin`` folder.
    installed_on_device: ClassVar[bool] = False
    #: Why the tool gives no per-operator times (None: the adapter has ``parse_op_profile``).
    no_op_profile: ClassVar[str | None] = None
    #: How to get the tool where it is missing (None: the generic advice only).
    how_to_get: ClassVar[str | None] = None

    env: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        self.env = dict(self.env or {})
        for name in self.env:
            if not _ENV_NAME_RE.match(name):
                raise ValueError(f"invalid environment variable name {name!r}")

    # Lifecycle hooks, in the order a cell calls them; each adapter overrides what its tool
    # needs (trtexec: all of them) and inherits the no-ops.
    @classmethod
    def for_cell(cls, backend: str, android: bool) -> ToolAdapter:
        """The adapter for a cell on ``backend`` on a device (``android``: over ADB)."""
        return cls()

    @staticmethod
    def workload_refusal(work: GenerativeWork | None) -> str | None:
        """Why the tool cannot run a generative cell's workload (None: it can)."""
        return None

    def locate(self, site: ToolSite) -> str:
        """The tool's path on the device: by default, deployed from ``tools_bin``."""
        return site.deploy(self.binary)

    def prepare(self, site: ToolSite, binary: str, cell: ToolCell, model: Path) -> ToolAdapter:
        """The adapter to run ``cell`` with, once the device has been asked what it needs
        (a version, a cache); ``model`` is the host copy of the cell's model file."""
        return self

    def collect(self, site: ToolSite, result: ToolResult) -> None:
        """Add to ``result`` what the tool left on the device beside its output."""

    @property
    def tool(self) -> str:
        """The tool's name in results and error messages."""
        return self.binary

    def command(self, binary_path: str, cell: ToolCell) -> list[str]:
        """The tool's argv for ``cell`` (without taskset, unquoted)."""
        raise NotImplementedError

    def shell_command(self, binary_path: str, cell: ToolCell, pid_file: str | None = None) -> str:
        """The full shell line a device runs: ``cd <model_dir> && [VAR=value ...] [taskset
        <mask>] <argv...>``, every word quoted with :func:`shlex.quote`.

        With ``pid_file``, the tool's PID is written there first (a small ``sh -c`` that
        ``exec``s it, the variables then set through ``env``), so a tool that hangs or a run
        that is aborted can be killed on the device.
        """
        words = ["cd", shlex.quote(cell.model_dir), "&&"]
        if pid_file is not None:
            words += ["sh", "-c", shlex.quote(RECORD_PID_THEN_EXEC), shlex.quote(pid_file)]
            if self.env:
                words.append("env")
        words += [f"{name}={shlex.quote(value)}" for name, value in (self.env or {}).items()]
        if cell.cores is not None:
            words += ["taskset", shlex.quote(taskset_mask(cell.cores))]
        words += [shlex.quote(arg) for arg in self.command(binary_path, cell)]
        return " ".join(words)

    def needs_logcat(self) -> bool:
        """Whether the result line must be read from logcat after the run."""
        return False

    def logcat_command(self) -> str | None:
        """Shell command that dumps the tool's logcat lines (run after the tool), or None."""
        if not self.needs_logcat() or self.logcat_tag is None:
            return None
        return f"logcat -d -v threadtime -s {shlex.quote(self.logcat_tag)}"

    def clear_logcat_command(self) -> str | None:
        """Shell command that empties logcat (run before the tool), or None."""
        return "logcat -c" if self.needs_logcat() else None

    def parse(
        self, stdout: str, stderr: str = "", logcat: str = "", *, model_path: str | None = None
    ) -> ToolResult:
        """Parse the tool's output. ``model_path`` picks the result line of that model when the
        tool can report several. Raises :class:`ToolParseError` naming the tool and the missing
        line when the essential timing line is absent.

        The streams are read one at a time (:func:`streams`); the first with a result wins."""
        for lines in streams(stdout, stderr, logcat):
            result = self.parse_lines(lines, model_path)
            if result is not None:
                return result
        raise ToolParseError(self.tool, self.result_line)

    def parse_lines(self, lines: list[str], model_path: str | None) -> ToolResult | None:
        """The result in one stream's cleaned lines, or None when it holds none."""
        raise NotImplementedError

    def backend_report(
        self, cell: ToolCell, stdout: str, stderr: str = "", logcat: str = ""
    ) -> BackendReport:
        """What the tool said about ``cell.backend`` (edgebench/framework_tools/accelerator.py):
        nothing for a CPU cell; each adapter reads its own tool's lines for an accelerator."""
        if cell.backend == CPU:
            return BackendReport()
        return self.accelerator_lines(
            cell, [line for s in streams(stdout, stderr, logcat) for line in s]
        )

    def accelerator_lines(self, cell: ToolCell, lines: list[str]) -> BackendReport:
        """The report for an accelerator cell from the cleaned lines of every stream."""
        raise NotImplementedError

    def _select(
        self,
        candidates: Iterable[tuple[str, object]],
        model_path: str | None,
        missing: str,
    ) -> object:
        """Pick the result whose label names ``model_path`` (the last such one); without a
        ``model_path`` there must be exactly one label."""
        items = list(candidates)
        if model_path is not None:
            matching = [item for label, item in items if label_matches(label, model_path)]
            if not matching:
                raise ToolParseError(self.tool, missing, f"none for model {model_path!r}")
            return matching[-1]
        labels = {label.strip() for label, _ in items}
        if len(labels) > 1:
            raise ToolParseError(
                self.tool,
                missing,
                f"results for {len(labels)} models ({', '.join(sorted(labels))}); "
                "pass model_path to choose one",
            )
        return items[-1][1]


def shape_arg(dims: Sequence[int], *, what: str) -> list[int]:
    """Validate a static shape: positive ints only (native tools take no dynamic dims)."""
    out = []
    for dim in dims:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"{what}: shape {list(dims)} has a non-positive or dynamic dim")
        out.append(dim)
    return out


@dataclass(kw_only=True, eq=False)
class SummaryLineAdapter(ToolAdapter):
    """A tool that prints one ``<model> ... min ... max ... avg`` line (milliseconds) per
    model it ran, and maybe the iteration count on a line of its own (benchncnn,
    ``benchmark.out``, TNNTest).

    A subclass sets ``result_re`` (named groups ``min``, ``max``, ``avg`` and, unless it
    overrides :meth:`label`, ``label``; matched at the start of a line) and ``count_re`` (group 1
    the count; searched anywhere in a line).
    """

    result_re: ClassVar[re.Pattern[str]]
    count_re: ClassVar[re.Pattern[str] | None] = None

    def label(self, match: re.Match[str]) -> str:
        """The model label of a result line."""
        return match.group("label")

    def narrow(self, candidates: list[tuple[str, object]]) -> list[tuple[str, object]]:
        """The candidates to choose from when no ``model_path`` is given."""
        return candidates

    def parse_lines(self, lines: list[str], model_path: str | None) -> ToolResult | None:
        candidates: list[tuple[str, object]] = []
        count = count_line = None
        for line in lines:
            counted = self.count_re.search(line) if self.count_re else None
            if counted:
                count, count_line = int_or_none(counted.group(1)), line
                continue
            match = self.result_re.match(line)
            if match:
                candidates.append((self.label(match), (match, line)))
        if not candidates:
            return None
        if model_path is None:
            candidates = self.narrow(candidates)
        picked = self._select(candidates, model_path, self.result_line)
        match, line = cast(tuple[re.Match[str], str], picked)
        result = ToolResult(
            tool=self.tool,
            count=count,
            min_ms=finite_or_none(match.group("min")),
            max_ms=finite_or_none(match.group("max")),
            avg_ms=finite_or_none(match.group("avg")),
            raw_lines=[x for x in (count_line, line) if x is not None],
        )
        if result.avg_ms is None and result.min_ms is None:
            raise ToolParseError(self.tool, self.result_line, "no finite timings")
        return result.finish()
