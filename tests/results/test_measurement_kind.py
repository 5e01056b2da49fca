"""MeasurementKind: one type says what a record's figures are, with its word, mark and rule."""

import pytest

from edgebench.results.measurement_kind import MeasurementKind


@pytest.mark.parametrize(
    ("emulated", "software", "kind"),
    [
        (False, False, MeasurementKind.REAL),
        (True, False, MeasurementKind.EMULATED_CPU),
        (False, True, MeasurementKind.SOFTWARE_DEVICE),
        # Records from before the two were kept apart: a software device's cell had emulated
        # set too; the accelerator decides.
        (True, True, MeasurementKind.SOFTWARE_DEVICE),
    ],
)
def test_the_kind_of_a_records_facts(emulated, software, kind):
    assert MeasurementKind.of(emulated, software) is kind


def test_only_a_real_chip_is_ranked_and_it_alone_is_falsy():
    for kind in MeasurementKind:
        assert kind.ranked is (kind is MeasurementKind.REAL)
        assert bool(kind) is not kind.ranked


def test_each_kind_has_its_own_words_never_the_others():
    assert MeasurementKind.EMULATED_CPU == "emulated CPU"
    assert MeasurementKind.SOFTWARE_DEVICE == "software device"
    assert MeasurementKind.EMULATED_CPU.mark == " (emulated)"
    assert MeasurementKind.SOFTWARE_DEVICE.mark == " (software)"
    assert MeasurementKind.REAL.mark == ""
    assert MeasurementKind.EMULATED_CPU.article == "an emulated CPU"
    assert MeasurementKind.SOFTWARE_DEVICE.article == "a software device"
    assert [k.tag for k in MeasurementKind] == ["", "emulated", "software"]
    assert "emulated" not in MeasurementKind.SOFTWARE_DEVICE + MeasurementKind.SOFTWARE_DEVICE.mark
