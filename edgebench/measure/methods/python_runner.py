"""Measurement through edgebench's Python runner (runners/runner.py) on the device: raw
per-iteration samples, and the outputs compared with ONNX Runtime on the host."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from edgebench.frameworks import install_hint
from edgebench.lab.device import Device, RunnerOutcome
from edgebench.lab.emulation_limits import unsupported_under_emulation
from edgebench.lab.runner_kinds import RunnerKind
from edgebench.lab.transports.base import TransportError
from edgebench.measure.generative_check import check_generation
from edgebench.measure.input_files import InputUnavailable
from edgebench.measure.methods.base import Visit, model_files
from edgebench.measure.output_check import compare_with_reference
from edgebench.measure.quantized_check import check_quantized, quant_info
from edgebench.measure.records import STDERR_TAIL_CHARS, failed_record, record_from_result
from edgebench.measure.reference_outputs import ReferenceUnavailable
from edgebench.measure.twin_check import failed_twin
from edgebench.planning.cells import Cell, Verdict
from edgebench.quantization import QUANTIZED_PRECISIONS
from edgebench.results.record_warnings import NO_ACCURACY, NO_OUTPUT_CHECK
from edgebench.results.records import Record
from edgebench.statuses import ErrorKind, Status


@dataclass
class Launched:
    """A runner's outcome, and what to add to its record afterwards (telemetry read beside
    it, warnings)."""

    outcome: RunnerOutcome
    finish: Callable[[Record], Record] = lambda record: record


class PythonRunner:
    kind = RunnerKind.PYTHON
    #: Whether the runner runs a quantized cell's evaluation set (spec ``eval_file``).
    runs_eval_set = True

    def launch(self, cell: Cell, device: Device, spec: dict[str, Any]) -> Launched:
        """Run the runner on the cell's device; the Python runner samples telemetry itself."""
        return Launched(device.run_runner(spec, cell.cores, cell.timeout_s))

    def availability(self, device: Device, framework: str) -> Verdict | None:
        facts = device.facts()
        emulated_out = unsupported_under_emulation(facts, framework)
        if emulated_out is not None:
            return (
                Status.UNSUPPORTED,
                ErrorKind.UNSUPPORTED,
                f"{framework} on {device.name}: {emulated_out}",
            )
        if facts.framework_available(framework):
            return None
        if facts.probe_error and not facts.frameworks:
            # The runner never started there: no framework was even looked for.
            return (Status.SKIPPED, ErrorKind.NOT_INSTALLED, f"{device.name}: {facts.probe_error}")
        info = facts.frameworks.get(framework, {})
        reason = info.get("reason")
        if reason in (None, ErrorKind.NOT_INSTALLED):
            hint = install_hint(framework)
            return (
                Status.SKIPPED,
                ErrorKind.NOT_INSTALLED,
                f"{framework} not installed on {device.name} ({hint})",
            )
        if reason == ErrorKind.UNSUPPORTED:
            return (
                Status.UNSUPPORTED,
                ErrorKind.UNSUPPORTED,
                f"{framework} on {device.name}: {info.get('message')}",
            )
        return (
            Status.SKIPPED,
            ErrorKind.NOT_INSTALLED,
            f"{framework} unavailable on {device.name}: {info.get('message')}",
        )

    def visit(self, cell: Cell, device: Device, visit: Visit) -> Record:
        cell_key = f"{visit.run_id}-{abs(hash(cell.cell_id)):x}"
        outputs_at = device.output_path(cell_key)
        try:
            prepared = visit.checks.input_file(cell)
        except InputUnavailable as exc:
            return failed_record(visit.run_id, cell, ErrorKind.BAD_SPEC, str(exc))
        spec = cell.spec(
            visit.checks.seed,
            save_outputs=outputs_at if visit.check_outputs else None,
            # Deployed like a model file: sent once per device, checked by its hash.
            input_file=device.stage_model([prepared]) if prepared is not None else None,
        )
        spec["model"] = device.stage_model(model_files(cell))
        eval_at = None
        if self.runs_eval_set and cell.quantization is not None and visit.check_outputs:
            eval_at = device.output_path(f"{cell_key}-eval")
            spec["eval_file"] = device.stage_model([cell.quantization.evaluation.path])
            spec["save_eval_outputs"] = eval_at
        launched = self.launch(cell, device, spec)
        outcome = launched.outcome
        try:
            if outcome.result is None:
                return failed_record(
                    visit.run_id, cell, ErrorKind.RUNNER, outcome.error, outcome.command.stderr
                )
            record = launched.finish(record_from_result(visit.run_id, cell, outcome.result))
            if record.status != Status.OK:
                return replace(
                    record,
                    stderr_tail=record.stderr_tail
                    or (outcome.command.stderr[-STDERR_TAIL_CHARS:] or None),
                )
            if visit.check_outputs and cell.precision in QUANTIZED_PRECISIONS:
                return self._check_quantized(record, cell, device, outputs_at, eval_at, visit)
            if visit.check_outputs:
                return self._check(record, cell, device, outputs_at, visit)
            return record
        finally:
            with contextlib.suppress(TransportError):
                device.discard_outputs(outputs_at)
                if eval_at is not None:
                    device.discard_outputs(eval_at)

    @staticmethod
    def _check_quantized(
        record: Record,
        cell: Cell,
        device: Device,
        outputs_at: str,
        eval_at: str | None,
        visit: Visit,
    ) -> Record:
        record = replace(record, quant=quant_info(cell))
        try:
            twin = failed_twin(cell, visit.checks)
            if twin is not None:
                return replace(
                    record, output_check=twin, status=Status.MISMATCH, error=twin.problem
                )
            evaluated = device.fetch_outputs(eval_at) if eval_at is not None else None
            single = None if evaluated is not None else device.fetch_outputs(outputs_at)
            return check_quantized(record, cell, visit.checks, evaluated, single)
        except (ReferenceUnavailable, InputUnavailable, TransportError) as exc:
            return record.with_warnings(NO_ACCURACY.make(reason=str(exc)))

    @staticmethod
    def _check(record: Record, cell: Cell, device: Device, outputs_at: str, visit: Visit) -> Record:
        try:
            ran_at = record.accelerator.precision if record.accelerator is not None else None
            if cell.generation is not None:
                check = check_generation(cell, device.fetch_outputs(outputs_at), visit.checks.seed)
            else:
                # A .tflite's twin that LiteRT does not agree with is no reference.
                check = failed_twin(cell, visit.checks) or compare_with_reference(
                    cell, device.fetch_outputs(outputs_at), visit.checks, ran_at
                )
        except (ReferenceUnavailable, InputUnavailable, TransportError) as exc:
            return record.with_warnings(NO_OUTPUT_CHECK.make(reason=str(exc)))
        if check is None:
            reason = "no ONNX reference for this model"
            return record.with_warnings(NO_OUTPUT_CHECK.make(reason=reason))
        checked = replace(record, output_check=check, warnings=[*record.warnings, *check.warnings])
        if check.passed:
            return checked
        problem = check.problem or f"outputs differ from ONNX Runtime: {check.summary()}"
        return replace(checked, status=Status.MISMATCH, error=problem)
