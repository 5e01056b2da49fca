"""A cell's runner spec is built from the declared settings (``TimingConfig``,
``TelemetryConfig``) into the runner's ``RunSpec``, with nothing in between."""

from dataclasses import fields
from pathlib import Path
from types import SimpleNamespace

import pytest

from edgebench.measure.session import _resolve_matrix
from edgebench.planning.cells import SUSTAINED_MAX_SAMPLES, build_cells
from edgebench.planning.config import RunConfig, TelemetryConfig, TimingConfig
from edgebench.runners.protocol.spec import RunSpec, TelemetrySpec


class FakeDevice:
    """What build_cells and the spec read of a device: its cpus, whether they are emulated."""

    def __init__(self, emulated: bool = False, profile=None) -> None:
        self.name = "emulated-board" if emulated else "phone"
        self.unreachable = None
        self.profile = profile
        self.lab_backends = None
        self._facts = SimpleNamespace(cpus=[0, 1, 2, 3], emulated=emulated)

    def facts(self):
        return self._facts

    def core_names(self):
        return {}


def one_cell(timing: TimingConfig, device=None, telemetry: TelemetryConfig | None = None):
    model = SimpleNamespace(name="net", error=None, format="onnx", path=Path("/m/net.onnx"))
    (cell,) = build_cells(
        [device or FakeDevice()],
        [model],
        ["onnxruntime"],
        inputs={"net": [{"name": "x", "shape": [1, 3, 8, 8]}]},
        threads=[2],
        cores=["all"],
        concurrency=1,
        precision="fp32",
        timing=timing,
        availability=lambda device, framework: None,
        telemetry=telemetry,
    )
    return cell


def test_the_spec_is_the_runners_own_and_carries_the_declared_timing():
    timing = TimingConfig(warmup=3, iterations=7, min_time_s=0.5, max_time_s=9.0)
    sent = one_cell(timing).spec(seed=5)
    spec = RunSpec.from_json(sent)
    assert set(sent) == {"schema", *(f.name for f in fields(RunSpec))}
    assert (spec.warmup, spec.iterations, spec.min_time_s, spec.max_time_s) == (3, 7, 0.5, 9.0)
    assert (spec.max_iterations, spec.target_ci, spec.seed, spec.threads) == (100_000, None, 5, 2)
    assert spec.telemetry is None


def test_target_ci_is_typed_in_percent_and_sent_as_a_fraction():
    spec = RunSpec.from_json(one_cell(TimingConfig(target_ci_pct=5.0)).spec())
    assert spec.target_ci == pytest.approx(0.05)


def test_more_iterations_than_the_usual_cap_raise_the_cap():
    spec = RunSpec.from_json(one_cell(TimingConfig(iterations=250_000)).spec())
    assert spec.max_iterations == 250_000


def test_a_sustained_window_is_one_long_window():
    config = RunConfig()
    config.timing.sustained_s = 30.0
    config.timing.target_ci_pct = 2.0
    cell = one_cell(_resolve_matrix(config).timing)
    spec = RunSpec.from_json(cell.spec())
    assert (spec.iterations, spec.min_time_s, spec.max_time_s) == (1, 30.0, 31.0)
    assert spec.max_iterations == SUSTAINED_MAX_SAMPLES and spec.target_ci is None
    assert cell.timeout_s == TimingConfig().timeout_s + 30.0


def test_an_emulated_cpu_runs_one_inference_for_the_output_check():
    timing = TimingConfig(warmup=10, iterations=100, target_ci_pct=1.0, sustained_s=60.0)
    cell = one_cell(timing, FakeDevice(emulated=True))
    spec = RunSpec.from_json(cell.spec())
    assert cell.correctness_only
    assert (spec.warmup, spec.iterations, spec.max_iterations) == (0, 1, 1)
    assert spec.min_time_s == 0 and spec.target_ci is None
    assert not one_cell(timing).correctness_only


def test_the_telemetry_settings_reach_the_spec_under_their_own_names():
    settings = TelemetryConfig(
        period_s=0.02,
        baseline_s=0.5,
        sync_marker="/data/marker",
        cooldown_temp_c=45.0,
        cooldown_max_wait_s=30.0,
        set_governor="performance",
    )
    profile = SimpleNamespace(energy_source="rapl", thermal_zones=["cpu-0"])
    cell = one_cell(TimingConfig(), FakeDevice(profile=profile), settings)
    assert RunSpec.from_json(cell.spec()).telemetry == TelemetrySpec(
        energy_source="rapl",
        period_s=0.02,
        baseline_s=0.5,
        zones=["cpu-0"],
        sync_marker="/data/marker",
        cooldown_temp_c=45.0,
        cooldown_max_wait_s=30.0,
        set_governor="performance",
    )
    # The runner waits for the baseline and the cool-down before the cell's own timeout starts.
    assert cell.timeout_s == TimingConfig().timeout_s + 0.5 + 30.0
    silent = one_cell(TimingConfig(), telemetry=TelemetryConfig(energy_source="none"))
    assert RunSpec.from_json(silent.spec()).telemetry.baseline_s == 0.0
