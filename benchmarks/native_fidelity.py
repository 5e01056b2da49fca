#!/usr/bin/env python3
"""Does edgebench-native measure what the frameworks' own tools measure?

benchmarks/fidelity.py restricted to edgebench-native's rows: ncnn against benchncnn, MNN
against benchmark.out and TNN against TNNTest, each built against the same library
edgebench-native links. Same options as fidelity.py (``--quick`` for a smoke run); a tool
that is not there skips its row with the reason, and it always exits 0.

Usage: python benchmarks/native_fidelity.py [fidelity.py's options]
"""

from __future__ import annotations

import sys

from fidelity import main

NATIVE_PAIRS = "ncnn-native,mnn-native,tnn-native"

if __name__ == "__main__":
    sys.exit(main(default_pairs=NATIVE_PAIRS))
