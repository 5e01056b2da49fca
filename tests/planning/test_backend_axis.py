"""The backend axis: cells per (framework, backend) with a verdict from the registry and the
runner that measures, columns per engine in the matrix, software devices never ranked, and a
cell that asked for an accelerator but got no accelerator report never a GPU figure."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from fakes.records import sampled_record

from edgebench.analysis.recommend import recommend
from edgebench.compute_backends import ACCELERATORS, BACKEND_NAMES, backends_of, engine_label
from edgebench.lab.accelerator_facts import Accelerator
from edgebench.lab.runner_kinds import RunnerKind
from edgebench.measure.records import refuse_unreported_accelerator
from edgebench.planning.backend_cells import SOFTWARE_DEVICE_ITERATIONS
from edgebench.planning.cells import DEFAULT_ROUNDS, auto_rounds, build_cells
from edgebench.planning.config import TimingConfig
from edgebench.reporting.matrix import format_matrix, framework_order
from edgebench.results.accelerator_part import AcceleratorRun
from edgebench.statuses import ErrorKind, Status


class FakeDevice:
    """What build_cells reads of a device, measured by ``kind``."""

    def __init__(
        self, kind: RunnerKind = RunnerKind.PYTHON, lab_backends=None, accelerators=()
    ) -> None:
        self.name = "phone"
        self.unreachable = None
        self.profile = None
        self.lab_backends = lab_backends
        self.runner_kind = kind
        self._facts = SimpleNamespace(cpus=[0, 1], emulated=False, accelerators=list(accelerators))

    def facts(self):
        return self._facts

    def core_names(self):
        return {}

    def runner_for(self, framework):
        return SimpleNamespace(kind=self.runner_kind)


def cells_for(frameworks, backends, device=None, timing=None, precision="fp32", chosen=True):
    model = SimpleNamespace(name="net", error=None, format="onnx", path=Path("/m/net.onnx"))
    return build_cells(
        [device or FakeDevice()],
        [model],
        frameworks,
        inputs={"net": [{"name": "x", "shape": [1, 3, 8, 8]}]},
        threads=[1],
        cores=["all"],
        concurrency=1,
        precision=precision,
        timing=timing or TimingConfig(),
        availability=lambda device, framework: None,
        backends=backends,
        frameworks_chosen=chosen,
    )


def test_every_accelerator_is_a_known_backend_of_its_framework():
    for entry in ACCELERATORS:
        assert entry.name in BACKEND_NAMES and entry.name != "cpu"
        assert entry.name in backends_of(entry.framework)
        assert entry.python or entry.edgebench_native or entry.tool, entry
        assert entry.provides


def test_cells_cover_each_framework_and_backend_with_the_registrys_verdicts(caplog):
    cells = cells_for(["ncnn", "onnxruntime", "tflite"], ["cpu", "vulkan", "nnapi"])
    by_engine = {c.engine: c for c in cells}
    # Pairs that do not exist get no cell, only a line each.
    assert list(by_engine) == [
        "ncnn",
        "ncnn·vulkan",
        "onnxruntime",
        "onnxruntime·nnapi",
        "tflite",
        "tflite·nnapi",
    ]
    assert "ncnn has no nnapi backend (its accelerators: vulkan): no cell on phone" in caplog.text
    ort_accelerators = "nnapi, qnn, cuda, tensorrt"
    assert (
        f"onnxruntime has no vulkan backend (its accelerators: {ort_accelerators})" in caplog.text
    )
    assert by_engine["ncnn"].verdict is None and by_engine["ncnn·vulkan"].verdict is None
    assert by_engine["ncnn·vulkan"].cell_id.endswith("/bvulkan")
    assert by_engine["ncnn"].cell_id.endswith("/s1")  # CPU cells keep the ids they had
    # The Python runner cannot select NNAPI for LiteRT; the framework's own tool can.
    status, kind, reason = by_engine["tflite·nnapi"].verdict
    assert (status, kind) == (Status.UNSUPPORTED, ErrorKind.UNSUPPORTED)
    assert "the Python runner cannot run tflite on nnapi" in reason
    assert "the framework's own benchmark tool can" in reason and "NNAPI" in reason
    assert by_engine["onnxruntime·nnapi"].verdict is None


def test_the_runner_kind_decides_whether_a_backend_can_be_selected():
    tools = FakeDevice(RunnerKind.FRAMEWORK_TOOLS)
    (cell,) = cells_for(["tflite"], ["nnapi"], tools)
    assert cell.verdict is None and cell.spec()["backend"] == "nnapi"
    (cell,) = cells_for(["onnxruntime"], ["qnn"], tools)
    assert "the framework's own benchmark tool cannot run onnxruntime on qnn" in cell.verdict[2]


def test_an_edgebench_native_build_runs_only_the_backends_it_compiled_in():
    native = FakeDevice(RunnerKind.EDGEBENCH_NATIVE)
    native.facts().frameworks = {
        "ncnn": {"available": True, "backends": ["cpu", "vulkan"]},
        "mnn": {"available": True, "backends": ["cpu"]},
    }
    ncnn_cpu, ncnn_gpu, mnn_cpu, mnn_gpu = cells_for(["ncnn", "mnn"], ["cpu", "vulkan"], native)
    assert ncnn_cpu.verdict is ncnn_gpu.verdict is mnn_cpu.verdict is None
    status, _, reason = mnn_gpu.verdict
    assert status == Status.UNSUPPORTED
    assert reason.startswith("this edgebench-native build has mnn on cpu only, not vulkan")
    assert "MNN_VULKAN=ON" in reason


def test_a_device_measures_its_lab_backends_unless_the_run_names_some():
    device = FakeDevice(lab_backends=("cpu", "vulkan"))
    assert [c.engine for c in cells_for(["ncnn"], [], device)] == ["ncnn", "ncnn·vulkan"]
    assert [c.engine for c in cells_for(["ncnn"], ["vulkan"], device)] == ["ncnn·vulkan"]
    assert [c.engine for c in cells_for(["ncnn"], [])] == ["ncnn"]


LAVAPIPE = Accelerator("Vulkan", "llvmpipe (LLVM 15.0.6, 256 bits)", "cpu", software="lavapipe")
ADRENO = Accelerator("Vulkan", "Adreno (TM) 740", "integrated-gpu")


def test_cells_on_a_software_device_take_a_few_samples_in_one_visit():
    timing = TimingConfig(warmup=10, iterations=100, min_time_s=2.0)
    for accelerators, software in (([LAVAPIPE], True), ([LAVAPIPE, ADRENO], False), ([], False)):
        device = FakeDevice(accelerators=accelerators)
        cpu, gpu = cells_for(["ncnn"], ["cpu", "vulkan"], device, timing)
        assert not cpu.software_device and cpu.timing == timing
        assert gpu.software_device is software
        if software:
            assert (gpu.timing.warmup, gpu.timing.iterations, gpu.timing.min_time_s) == (
                1,
                SOFTWARE_DEVICE_ITERATIONS,
                0.0,
            )
        else:
            assert gpu.timing == timing
    # Interleaving is for cells whose figures rank: one CPU cell and a software one need none.
    cells = cells_for(["ncnn"], ["cpu", "vulkan"], FakeDevice(accelerators=[LAVAPIPE]))
    assert auto_rounds(cells) == 1
    assert auto_rounds(cells_for(["ncnn"], ["cpu", "vulkan"], FakeDevice())) == DEFAULT_ROUNDS


def gpu_record(device: str, median: float, seed: int, software: bool, **fields):
    return sampled_record(
        device,
        "ncnn",
        median,
        seed,
        backend="vulkan",
        accelerator=AcceleratorRun("Vulkan", device="llvmpipe", software=software),
        **fields,
    )


def test_the_matrix_has_a_column_per_engine_and_software_cells_are_never_starred():
    cpu = sampled_record("pc", "ncnn", 14.0, 1)
    slow_cpu = sampled_record("pc", "mnn", 30.0, 2)
    gpu = gpu_record("pc", 2.0, 3, software=True)
    records = [cpu, slow_cpu, gpu]
    assert framework_order(records) == ["mnn", "ncnn", "ncnn·vulkan"]
    text = format_matrix(records)
    header = next(line for line in text.splitlines() if line.startswith("device"))
    assert header.split() == ["device", "mnn", "ncnn", "ncnn·vulkan"]
    row = next(line for line in text.splitlines() if line.startswith("pc"))
    # The software cell is far the fastest, yet the star stays with the real CPU's best.
    assert row.split() == ["pc", "30.0", "14.0*", "2.00", "(software)"]
    assert "software: pc · vulkan ran on a software device (llvmpipe)" in text
    assert "emulated CPU" not in text


def test_recommend_answers_with_framework_and_backend():
    records = [
        sampled_record("a", "ncnn", 10.0, 1),
        gpu_record("a", 4.0, 2, software=False),
        sampled_record("b", "ncnn", 12.0, 3),
        gpu_record("b", 5.0, 4, software=False),
    ]
    rec = recommend(records, ["a", "b"], "net")
    assert rec.best == engine_label("ncnn", "vulkan") == "ncnn·vulkan"


def test_an_accelerator_cell_without_an_accelerator_report_is_no_gpu_figure():
    record = refuse_unreported_accelerator(sampled_record("pc", "ncnn", 14.0, 1, backend="vulkan"))
    assert (record.status, record.error_kind) == (Status.UNSUPPORTED, ErrorKind.FALLBACK)
    assert record.latency_ms is None and record.samples_ns == [] and record.n_samples == 0
    assert "reported no accelerator" in record.error
    reported = refuse_unreported_accelerator(gpu_record("pc", 2.0, 2, software=False))
    assert reported.status == Status.OK and reported.latency_ms is not None
