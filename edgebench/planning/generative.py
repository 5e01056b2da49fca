"""Generative cells: a GGUF model on a generative runtime (llama.cpp, OpenVINO GenAI, ...),
measured on a workload of prompt tokens, generated tokens and context depth instead of one
inference on input tensors (docs/generative.md).

A generative cell is a ``Cell`` whose ``generation`` is set; its ``precision`` is the weight
type its file holds (``f16``, ``q8_0``, ``q4_0``). Every runtime gets the same prompt token ids,
seeded and drawn from the model's ordinary tokens, the same threads and cores.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from edgebench.errors import UserError
from edgebench.frameworks import FRAMEWORKS, find_framework, workload_of
from edgebench.lab.cores import resolve_cores
from edgebench.lab.device import Device
from edgebench.lab.device_snapshot import DeviceSnapshot
from edgebench.planning.cells import Availability, Cell, Verdict, correctness_timing
from edgebench.planning.config import TelemetryConfig, TimingConfig
from edgebench.planning.generative_workload import CONTEXT_SLACK, GenerativeWorkload
from edgebench.planning.modelref import BUILTIN_LLMS, GGUF, ModelRef, builtin_llm_ref
from edgebench.planning.sweep_settings import Sweep
from edgebench.statuses import ErrorKind, Status


def context_problem(model: ModelRef, workload: GenerativeWorkload) -> str | None:
    """Why the workload does not fit the model's context, or None (also when unknown)."""
    facts = model.llm
    limit = facts.context_length if facts is not None else 0
    if not limit or workload.context_tokens - CONTEXT_SLACK <= limit:
        return None
    longest_prompt = max(workload.prompt_tokens)
    return (
        f"{model.name}'s context holds {limit} tokens, and this workload needs "
        f"{workload.context_tokens - CONTEXT_SLACK} (prompt {longest_prompt}, context depth "
        f"{workload.context_depth} + {workload.gen_tokens} generated); lower --prompt-tokens, "
        "--context-depth or --gen-tokens"
    )


def workload_of_sweep(sweep: Sweep) -> GenerativeWorkload:
    """The generative workload the run's settings ask for."""
    return GenerativeWorkload(
        prompt_tokens=tuple(dict.fromkeys(sweep.prompt_tokens)),
        gen_tokens=sweep.gen_tokens,
        context_depth=sweep.context_depth,
    )


def split_models(
    models: Sequence[ModelRef], weights: Sequence[str], cache: Path
) -> tuple[list[ModelRef], list[ModelRef]]:
    """(tensor models, generative models): each built-in generative model once per weight
    type of ``weights`` (``--weights``), a .gguf file at its own."""
    tensor = [m for m in models if m.format != GGUF]
    generative = []
    for model in (m for m in models if m.format == GGUF):
        if model.source not in BUILTIN_LLMS or model.error is not None:
            generative.append(model)  # a .gguf file runs at its own weight type
            continue
        generative += [
            model if weight == model.precision else builtin_llm_ref(model.source, cache, weight)
            for weight in dict.fromkeys(weights)
        ]
    return tensor, generative


def check_pairs(
    tensor_models: Sequence[ModelRef],
    llm_models: Sequence[ModelRef],
    tensor_frameworks: Sequence[str],
    llm_frameworks: Sequence[str],
    sweep: Sweep,
) -> None:
    """A run that names frameworks of one workload only, with models of the other: one line
    naming the frameworks that run them (a default run takes every framework)."""
    if not sweep.frameworks:
        return
    for models, frameworks, kind in (
        (llm_models, llm_frameworks, "generative"),
        (tensor_models, tensor_frameworks, "tensor"),
    ):
        if models and not frameworks:
            runs = [f.name for f in FRAMEWORKS if f.workload == kind and not f.reference]
            names = sorted({m.name for m in models})
            raise UserError(
                f"{', '.join(names)} {'is a' if len(names) == 1 else 'are'} {kind} "
                f"model{'s' if len(names) > 1 else ''}, and none of --frameworks "
                f"{','.join(sweep.frameworks)} runs one; add {' or '.join(runs)}"
            )


def split_frameworks(frameworks: Sequence[str]) -> tuple[list[str], list[str]]:
    """(tensor frameworks, generative frameworks) of ``frameworks``, each in the given order."""
    tensor = [f for f in frameworks if workload_of(f) != "generative"]
    generative = [f for f in frameworks if workload_of(f) == "generative"]
    return tensor, generative


def generative_format(framework: str) -> str | None:
    """The format ``framework`` runs a GGUF model as, made through the artifact cache
    (planning/prepare.py); None where it reads the GGUF itself."""
    entry = find_framework(framework)
    fmt = entry.artifact_format if entry is not None else None
    return fmt if fmt != GGUF else None


def build_generative_cells(
    devices: Sequence[Device],
    models: Sequence[ModelRef],
    frameworks: Sequence[str],
    *,
    workload: GenerativeWorkload,
    threads: Sequence[int],
    cores: Sequence[str],
    timing: TimingConfig,
    availability: Availability,
    telemetry: TelemetryConfig | None = None,
) -> list[Cell]:
    """Every (device, model, framework, threads, cores) of generative ``models`` (each at its
    weight type: ``ModelRef.precision``) on the generative ``frameworks``."""
    cells = []
    for device in devices:
        unreachable = device.unreachable
        core_sets: list[tuple[str, list[int] | None]] = [(sel, None) for sel in cores]
        if not unreachable:
            cpus, names = device.facts().cpus, device.core_names()
            core_sets = [(sel, resolve_cores(sel, cpus, names, device.name)) for sel in cores]
        emulated = not unreachable and device.facts().emulated
        snapshot = DeviceSnapshot.of(device)
        cell_workload = workload.correctness_only() if emulated else workload
        cell_timing = correctness_timing(timing) if emulated else timing
        for model in models:
            for framework in frameworks:
                verdict: Verdict | None = None
                if model.error:
                    verdict = (Status.FAILED, ErrorKind.MODEL_LOAD, model.error)
                elif (problem := context_problem(model, cell_workload)) is not None:
                    verdict = (Status.FAILED, ErrorKind.BAD_SPEC, problem)
                if unreachable:
                    verdict = (Status.FAILED, ErrorKind.TRANSPORT, unreachable)
                verdict = verdict or availability(device, framework)
                for n_threads in threads:
                    for selection, cpu_ids in core_sets:
                        cells.append(
                            Cell(
                                device=snapshot,
                                model=model,
                                framework=framework,
                                precision=model.precision or "f16",
                                threads=n_threads,
                                cores_selection=selection,
                                cores=cpu_ids,
                                concurrency=1,
                                inputs=[],
                                timing=cell_timing,
                                correctness_only=emulated,
                                verdict=verdict,
                                telemetry=telemetry,
                                stages=False,
                                generation=cell_workload,
                                convert_to=generative_format(framework) if not verdict else None,
                            )
                        )
    return cells
