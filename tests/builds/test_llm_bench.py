"""llm_bench's build (edgebench/builds/llm_bench.py) without compiling: it needs the runner whose
library it links, and says so in one line naming the command; the real compile and run are in
tests/framework_tools/test_mnn_llm_bench.py."""

from __future__ import annotations

import pytest

from edgebench.builds import NATIVE_DIR_ENV, BuildError
from edgebench.builds.llm_bench import (
    BUILD_COMMAND,
    build_llm_bench,
    built_llm_bench,
    runner_libraries,
)
from edgebench.builds.targets import parse_target
from edgebench.framework_tools.mnn_llm_bench import LlmBenchAdapter


@pytest.fixture(autouse=True)
def empty_native_root(eb_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A native-runner root with nothing built (inside this test's private cache)."""
    monkeypatch.delenv(NATIVE_DIR_ENV, raising=False)


@pytest.mark.parametrize("target", ["x86_64-linux", "aarch64-linux"])
def test_without_a_runner_each_call_names_the_runner_build(target: str) -> None:
    parsed = parse_target(target)
    expected = f"no edgebench-native for {target}: run `edgebench runners build`"
    for call in (runner_libraries, built_llm_bench, build_llm_bench):
        with pytest.raises(BuildError) as exc:
            call(parsed)
        assert str(exc.value) == expected


def test_the_adapter_names_the_build_command_for_a_missing_tool() -> None:
    assert BUILD_COMMAND == "python benchmarks/fidelity_tools.py --frameworks mnn-llm"
    assert LlmBenchAdapter.how_to_get is not None
    assert BUILD_COMMAND in LlmBenchAdapter.how_to_get
    assert "--target aarch64-linux" in LlmBenchAdapter.how_to_get
