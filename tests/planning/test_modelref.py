"""A converted model given by path travels with the files it needs on a remote device."""

from __future__ import annotations

from pathlib import Path

from edgebench.planning.modelref import resolve_model


def test_an_ncnn_artifact_takes_its_weights_and_io_map_along(tmp_path: Path) -> None:
    param = tmp_path / "model.param"
    param.write_text("7767517\n")
    (tmp_path / "model.bin").write_bytes(b"\0" * 8)
    without = resolve_model(str(param), tmp_path)
    assert [p.name for p in without.companions] == ["model.bin"] and without.error is None
    (tmp_path / "io.json").write_text("{}")
    with_map = resolve_model(str(param), tmp_path)
    assert [p.name for p in with_map.companions] == ["model.bin", "io.json"]
    assert with_map.sha256 != without.sha256  # the map is part of what was measured


def test_a_tflite_artifact_takes_its_io_map_along(tmp_path: Path) -> None:
    model = tmp_path / "model.tflite"
    model.write_bytes(b"TFL3")
    assert resolve_model(str(model), tmp_path).companions == []
    (tmp_path / "io.json").write_text("{}")
    assert [p.name for p in resolve_model(str(model), tmp_path).companions] == ["io.json"]
