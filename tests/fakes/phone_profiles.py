"""Phones for the ADB device emulator with a GPU: their properties, the GPU libraries in their
vendor and system folders, and the dump ``dumpsys SurfaceFlinger`` prints.

The dumps keep the lines edgebench reads in the form phones print them: ``GLES: <vendor>,
<renderer>, OpenGL ES <version> <driver build>`` (an Adreno driver build holds commas itself),
next to other lines that mention GLES (Android 14's RenderEngine header) which are not it.
The rest of a real dump (layers, displays, vsync) is cut to a few lines of its shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fakes.adb_emulator import DUMPS_DIR

_DUMP_HEAD = """Build configuration: [sf PRESENT_TIME_OFFSET=0 FORCE_HWC_FOR_RBG_TO_YUV=1
MAX_VIRT_DISPLAY_DIM=0 RUNNING_WITHOUT_SYNC_FRAMEWORK=0 NUM_FRAMEBUFFER_SURFACE_BUFFERS=3]

Display identification data:
Display 0 (HWC display 0): no identification data

Sync configuration: [using: EGL_ANDROID_native_fence_sync EGL_KHR_wait_sync]

"""
_DUMP_TAIL = """
Visible layers (count = 2)
Total missed frame count: 0
"""


@dataclass(frozen=True)
class PhoneProfile:
    name: str
    props: dict[str, str]
    #: Paths under the phone's root that hold a GPU library.
    libraries: tuple[str, ...]
    #: SurfaceFlinger's GPU line.
    gles: str
    #: Lines of the dump before the GPU line (RenderEngine's, on newer Android).
    render_engine: str = ""

    @property
    def surfaceflinger(self) -> str:
        return _DUMP_HEAD + self.render_engine + self.gles + "\n" + _DUMP_TAIL

    def install(self, sandbox: Path) -> None:
        """Put the libraries and the dump into an emulator's sandbox (before it starts)."""
        for library in self.libraries:
            path = sandbox / library
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"\x7fELF placeholder for a vendor GPU library\n")
        dumps = sandbox / DUMPS_DIR
        dumps.mkdir(parents=True, exist_ok=True)
        (dumps / "SurfaceFlinger").write_text(self.surfaceflinger)


#: A Snapdragon 8 Gen 2 phone on Android 14: Adreno 740, OpenCL in /vendor, the Adreno
#: Vulkan HAL.
SNAPDRAGON = PhoneProfile(
    name="snapdragon",
    props={
        "ro.product.model": "SM-S911B",
        "ro.build.version.release": "14",
        "ro.soc.model": "SM8550",
        "ro.board.platform": "kalama",
        "ro.hardware.vulkan": "adreno",
    },
    libraries=(
        "vendor/lib64/libOpenCL.so",
        "vendor/lib/libOpenCL.so",
        "system/lib64/libvulkan.so",
        "system/lib/libvulkan.so",
    ),
    gles=(
        "GLES: Qualcomm, Adreno (TM) 740, OpenGL ES 3.2 V@0676.32 "
        "(GIT@8b5f0c4e2d, I6a1e53c7f9, 1680011842) (Date:03/28/23)"
    ),
    render_engine=(
        "RenderEngine supports protected context: 1\n"
        "------------RE GLES (Ganesh)------------\n"
        "EGL implementation : 1.5\n"
    ),
)

#: A Kirin 980 phone on Android 10: Mali-G76, the Mali Vulkan HAL and no libOpenCL.so, no
#: ro.soc.model (older phones lack it).
KIRIN = PhoneProfile(
    name="kirin",
    props={
        "ro.product.model": "ELE-L29",
        "ro.build.version.release": "10",
        "ro.soc.model": "",
        "ro.board.platform": "kirin980",
        "ro.hardware.vulkan": "mali",
    },
    libraries=("system/lib64/libvulkan.so", "system/lib/libvulkan.so"),
    gles="GLES: ARM, Mali-G76, OpenGL ES 3.2 v1.r18p0-01rel0.03a31fb463b14c043b85e5070853d58b",
)

PHONES = (SNAPDRAGON, KIRIN)
