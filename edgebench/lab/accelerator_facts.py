"""What accelerators a device has: the Vulkan, OpenCL, OpenVINO and CUDA devices its runner's
probe enumerated, or on an Android phone the GPU libraries, SurfaceFlinger's GLES line and the
Vulkan HAL property; and, per API, why there is none.

``collect_accelerators`` reads the probe, ``collect_android_accelerators`` the phone's shell
answer to ``ANDROID_ACCELERATOR_COMMAND``; ``accelerator_devices`` is what planning asks
("which Vulkan devices has this device"), from facts or a stored record's ``device_info``
(older records have none). Wherever the facts hold no CUDA device, ``accelerator_problems``
holds a ``CUDA`` line saying why (planning's verdict for CUDA and TensorRT cells).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from edgebench.frameworks.rows import OPENCL_PACKAGES, VULKAN_PACKAGES
from edgebench.runners.protocol.devices import software_kind

if TYPE_CHECKING:
    from edgebench.lab.facts import DeviceFacts
    from edgebench.lab.runner_choice import Probe

#: What a device without an API's loader or device installs, per API (Debian names).
INSTALL = {"Vulkan": VULKAN_PACKAGES, "OpenCL": OPENCL_PACKAGES}
#: Where Android keeps the GPU libraries, relative to the root (64-bit first).
ANDROID_LIBRARY_DIRS = (
    "system/vendor/lib64",
    "vendor/lib64",
    "system/lib64",
    "system/vendor/lib",
    "vendor/lib",
    "system/lib",
)
ANDROID_LIBRARIES = {"OpenCL": "libOpenCL.so", "Vulkan": "libvulkan.so"}
CUDA = "CUDA"
#: A probe that answered for the other APIs but not CUDA (a runner older than the CUDA probe).
CUDA_NOT_ASKED = "no NVIDIA GPU known: the runner's probe did not ask for CUDA"
ANDROID_NO_CUDA = "no NVIDIA GPU: Android phones have no CUDA driver"
LIBRARIES_MARK = "--- libraries"
SURFACEFLINGER_MARK = "--- SurfaceFlinger"
#: One round trip: the GPU libraries present (paths from the root: the root is found as the
#: parent of $ANDROID_ROOT, /system on every phone), then SurfaceFlinger's ``GLES:`` line.
ANDROID_ACCELERATOR_COMMAND = (
    f"echo '{LIBRARIES_MARK}'; "
    '(cd "${ANDROID_ROOT:-/system}/.." && '
    f"for d in {' '.join(ANDROID_LIBRARY_DIRS)}; do "
    f"for l in {' '.join(ANDROID_LIBRARIES.values())}; do "
    '[ -e "$d/$l" ] && echo "/$d/$l"; done; done); '
    f"echo '{SURFACEFLINGER_MARK}'; "
    "dumpsys SurfaceFlinger 2>/dev/null | grep -m 1 '^GLES:'; true"
)


@dataclass(frozen=True)
class Accelerator:
    """One device an accelerator API offers."""

    api: str  # Vulkan, OpenCL, OpenVINO; OpenGL ES for a phone's GPU line
    name: str
    #: cpu, integrated-gpu, discrete-gpu, virtual-gpu (Vulkan); gpu, accelerator, cpu (OpenCL);
    #: gpu, npu, cpu (OpenVINO)
    type: str
    #: The software implementation serving it (lavapipe, pocl, SwiftShader, ...); None: hardware.
    software: str | None = None
    driver: str | None = None
    api_version: str | None = None
    #: The OpenCL platform it belongs to.
    platform: str | None = None
    #: Its index in its API (OpenCL: within its platform), as a backend selects it.
    index: int | None = None
    #: On a phone: the library found (the loader), where devices were not enumerated.
    library: str | None = None
    #: Whatever else the probe said (vendor ids, versions in full, memory, extensions).
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Accelerator:
        """From a probe's entry or a stored record's; fields it lacks are None."""
        known = {f.name for f in fields(cls)} - {"details"}
        values: dict[str, Any] = {k: data.get(k) for k in known}
        values["name"] = str(values["name"] or "?")
        values["type"] = str(values["type"] or "other")
        values["api"] = str(values["api"] or "?")
        extra = {k: v for k, v in data.items() if k not in known and k != "details"}
        return cls(**values, details={**(data.get("details") or {}), **extra})

    def describe(self) -> str:
        """``vulkan: llvmpipe (...), cpu, Mesa 22.3.6 (...), Vulkan 1.3.230 — software
        (lavapipe)``: the line ``edgebench devices`` prints."""
        if self.library is not None:
            parts = [self.library, f"for {self.name}" if self.name != "?" else "GPU unknown"]
            parts += [f"driver {self.driver}"] if self.driver else []
        else:
            name = f"{self.platform} / {self.name}" if self.platform else self.name
            # An OpenCL driver's bare version ("3.1+debian") says less than its platform does.
            driver = self.driver if self.api != "OpenCL" else None
            version = f"{self.api} {self.api_version}" if self.api_version else None
            parts = [name, self.type, *(p for p in (driver, version) if p)]
        line = f"{self.api.lower()}: {', '.join(parts)}"
        return line + (f" — software ({self.software})" if self.software else "")


def collect_accelerators(probe: Probe) -> dict[str, Any]:
    """The accelerators the runner's probe enumerated, and per API why there are none."""
    if not probe.ok:
        return {}
    answer = probe.answer.get("accelerators")
    if not isinstance(answer, Mapping):
        return {"accelerator_problems": {"accelerators": "the runner did not report them"}}
    devices = [Accelerator.from_dict(d) for d in answer.get("devices") or [] if d]
    problems = {}
    for api, problem in (answer.get("problems") or {}).items():
        problems[str(api)] = problem_line(str(api), problem)
    if CUDA not in problems and not any(d.api == CUDA for d in devices):
        problems[CUDA] = CUDA_NOT_ASKED
    return {"accelerators": devices, "accelerator_problems": problems}


def problem_line(api: str, problem: Mapping[str, Any]) -> str:
    """The runner's problem as one line, with the packages to install where a loader or a
    device is missing."""
    message = str(problem.get("message") or "unknown")
    if problem.get("kind") in ("no_loader", "no_device") and api in INSTALL:
        return f"{message}: install {INSTALL[api]}"
    return message


def collect_android_accelerators(answer: str, vulkan_hal: str) -> dict[str, Any]:
    """From the phone's answer to ``ANDROID_ACCELERATOR_COMMAND`` and its
    ``ro.hardware.vulkan``: the GPU (SurfaceFlinger's GLES line) and an entry per GPU library
    found; a problem per API whose library is missing."""
    libraries, gles = _sections(answer)
    gpu = parse_gles_line(gles[0]) if gles else None
    name = gpu.name if gpu else "?"
    software = gpu.software if gpu else None
    devices = [gpu] if gpu else []
    problems = {}
    for api, library in ANDROID_LIBRARIES.items():
        found = next((p for p in libraries if p.rsplit("/", 1)[-1] == library), None)
        if found is None:
            where = ", ".join(f"/{d}" for d in ANDROID_LIBRARY_DIRS)
            problems[api] = f"no {library} under {where}: the phone's vendor ships no {api}"
            continue
        driver = f"vulkan.{vulkan_hal}.so" if api == "Vulkan" and vulkan_hal else None
        devices.append(
            Accelerator(api, name, "gpu", software, driver=driver, library=found)
        )  # fmt: skip
    if gpu is None:
        problems["OpenGL ES"] = "SurfaceFlinger printed no GLES line (dumpsys SurfaceFlinger)"
    problems[CUDA] = ANDROID_NO_CUDA
    return {"accelerators": devices, "accelerator_problems": problems}


def merge_accelerators(runner: Mapping[str, Any], phone: Mapping[str, Any]) -> dict[str, Any]:
    """The runner's accelerator facts with a phone's shell facts added: a library entry or a
    problem only for an API the runner enumerated no device of (the phone's GPU line always)."""
    devices = list(runner.get("accelerators") or [])
    enumerated = {a.api for a in devices}
    devices += [
        a for a in phone.get("accelerators") or [] if a.library is None or a.api not in enumerated
    ]
    problems = {**runner.get("accelerator_problems", {}), **phone.get("accelerator_problems", {})}
    problems = {api: why for api, why in problems.items() if api not in {a.api for a in devices}}
    return {"accelerators": devices, "accelerator_problems": problems}


def parse_gles_line(line: str) -> Accelerator | None:
    """``GLES: Qualcomm, Adreno (TM) 740, OpenGL ES 3.2 V@0676.32 (GIT@..., ...)``: vendor,
    renderer, then the version and the driver's build (which may hold commas)."""
    _, sep, rest = line.partition("GLES:")
    parts = [p.strip() for p in rest.split(",", 2)]
    if not sep or len(parts) < 2 or not parts[1]:
        return None
    vendor, renderer = parts[0], parts[1]
    version_words = (parts[2] if len(parts) > 2 else "").split()
    api_version = " ".join(version_words[2:3]) or None  # "OpenGL ES 3.2 ..." -> "3.2"
    driver = " ".join(version_words[3:]) or None
    return Accelerator(
        "OpenGL ES",
        renderer,
        "gpu",
        software_kind("OpenGL ES", renderer, "gpu", vendor),
        driver=driver,
        api_version=api_version,
        details={"vendor": vendor},
    )


def _sections(answer: str) -> tuple[list[str], list[str]]:
    libraries: list[str] = []
    gles: list[str] = []
    current: list[str] | None = None
    for raw in answer.splitlines():
        line = raw.strip()
        if line == LIBRARIES_MARK:
            current = libraries
        elif line == SURFACEFLINGER_MARK:
            current = gles
        elif line and current is not None:
            current.append(line)
    return libraries, gles


def accelerator_devices(facts: DeviceFacts | Mapping[str, Any], api: str) -> list[Accelerator]:
    """The devices of ``api`` ("Vulkan", "OpenCL", "OpenVINO", any case) a device has, from
    its facts or a record's ``device_info``; [] for a record older than these facts."""
    if isinstance(facts, Mapping):
        entries = [Accelerator.from_dict(d) for d in facts.get("accelerators") or [] if d]
    else:
        entries = list(facts.accelerators)
    return [a for a in entries if a.api.lower() == api.lower()]


def describe_accelerators(facts: DeviceFacts) -> list[str]:
    """``edgebench devices``' lines: one per device, then one per API that has none."""
    if not facts.accelerators and not facts.accelerator_problems:
        return ["accelerators: not probed (no runner answered a probe here)"]
    lines = [a.describe() for a in facts.accelerators]
    listed = {a.api for a in facts.accelerators if a.library is None}
    for api, problem in facts.accelerator_problems.items():
        if api not in listed:
            lines.append(f"{api.lower()}: none ({problem})")
    return lines
