"""The runner's result parts that the host stores as they come
(runners/protocol/result_parts.py) and
the record parts that read them (results/): the same field names both ways, so a field added on
one side only is caught here, not lost silently in a stored run. The runner cannot import the
host's parts (it runs on Python 3.8 with nothing of the host), hence the two definitions."""

import dataclasses

import pytest

from edgebench.results.records import PARTS
from edgebench.runners.protocol import result_parts

#: Record part name -> the runner part stored under it as written.
MIRRORED = {
    "accelerator": result_parts.AcceleratorPart,
    "nvidia": result_parts.NvidiaPart,
    "telemetry": result_parts.TelemetryPart,
}


@pytest.mark.parametrize("name", sorted(MIRRORED))
def test_the_runner_part_and_the_record_part_have_the_same_fields(name):
    runner = {f.name for f in dataclasses.fields(MIRRORED[name])}
    record = {f.name for f in dataclasses.fields(PARTS[name])}
    assert runner == record, (sorted(runner - record), sorted(record - runner))
