"""toybench: ``toybench MODEL ITERATIONS THREADS [--dsp]`` prints ``running on dsp`` when it
took the DSP, then ``MODEL min = .. max = .. avg = ..`` (milliseconds)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from edgebench.framework_tools.accelerator import BackendReport, accelerator_run, tool_argument
from edgebench.framework_tools.base import NUMBER, SummaryLineAdapter, ToolCell


@dataclass(kw_only=True, eq=False)
class ToyBenchAdapter(SummaryLineAdapter):
    framework = "toy"
    binary = "toybench"
    result_re = re.compile(
        rf"^(?P<label>\S+)\s+min = (?P<min>{NUMBER}) max = (?P<max>{NUMBER}) "
        rf"avg = (?P<avg>{NUMBER})$"
    )
    result_line = "'<model> min = ... max = ... avg = ...' line"
    no_op_profile = "toybench prints only whole-model min/max/avg"

    def command(self, binary_path: str, cell: ToolCell) -> list[str]:
        switch = tool_argument(self.framework, cell.backend)
        argv = [binary_path, cell.model_path, str(cell.iterations), str(cell.threads)]
        return argv + ([switch] if switch else [])

    def accelerator_lines(self, cell: ToolCell, lines: list[str]) -> BackendReport:
        if "running on dsp" in lines:
            return BackendReport(run=accelerator_run(self.framework, cell.backend, device="dsp0"))
        return BackendReport(fallback="toybench: no 'running on dsp' line")
