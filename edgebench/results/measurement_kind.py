"""What a measurement's figures are: a real chip's, or for correctness only because the chip
was not really there (an emulated CPU, or an accelerator API served by the CPU). One type
with its own words and ranking rule, so no reader tests the two booleans a record stores
(``emulated``, ``accelerator.software``) or words the kinds on its own."""

from __future__ import annotations

from enum import StrEnum


class MeasurementKind(StrEnum):
    """A record's kind. Its value is the word every command uses (empty for a real chip, so a
    kind is falsy exactly when its latency counts)."""

    REAL = ""
    #: qemu user mode on another architecture: ``Record.emulated``.
    EMULATED_CPU = "emulated CPU"
    #: An accelerator API served by the CPU (lavapipe, pocl): ``Accelerator.software``.
    SOFTWARE_DEVICE = "software device"

    @property
    def ranked(self) -> bool:
        """Whether its latencies may lead or trail a comparison."""
        return self is MeasurementKind.REAL

    @property
    def tag(self) -> str:
        """Its one-word tag in tables and charts: ``emulated``, ``software``, ""."""
        return _TAGS[self]

    @property
    def mark(self) -> str:
        """What its figure shows after it in a table: `` (emulated)``, `` (software)``, ""."""
        return f" ({self.tag})" if self.tag else ""

    @property
    def article(self) -> str:
        """``an emulated CPU``, ``a software device``: the kind with its article."""
        return f"{'an' if self is MeasurementKind.EMULATED_CPU else 'a'} {self.value}"

    @classmethod
    def of(cls, emulated: bool, software_accelerator: bool) -> MeasurementKind:
        """The kind of a record with those facts. The accelerator decides first: records
        written before the two were kept apart have ``emulated`` set on a software device's
        cell too."""
        if software_accelerator:
            return cls.SOFTWARE_DEVICE
        return cls.EMULATED_CPU if emulated else cls.REAL


_TAGS = {
    MeasurementKind.REAL: "",
    MeasurementKind.EMULATED_CPU: "emulated",
    MeasurementKind.SOFTWARE_DEVICE: "software",
}
