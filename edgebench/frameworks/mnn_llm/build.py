"""MNN-LLM in edgebench-native: MNN's own static library, whose build compiles in the LLM
engine (``edgebench.frameworks.mnn.build.LLM_FLAGS``), so a runner with both mnn and mnn-llm
links one libMNN.a; only its backend file (backends/mnn_llm.cpp) is its own."""

from __future__ import annotations

from dataclasses import replace

from edgebench.frameworks.mnn.build import BUILD as MNN_BUILD

BUILD = replace(MNN_BUILD, library_of="mnn", runner_backend=("mnn_llm.cpp",))
