"""What the TNN files are checked with, since TNN itself (its converter and its runtime)
cannot be installed here: ``reader.read_model`` parses a ``.tnnproto`` + ``.tnnmodel`` pair
back into records, sharing no code with the writer, and ``reference.run_model`` executes them
with NumPy as TNN's CPU backend would.

Loaded only by the tests and for debugging a conversion, never by ``convert`` or ``run``::

    from fakes.tnn_checking import read_model, run_model
    outputs = run_model(read_model(proto, model), {"input": x})
"""

from fakes.tnn_checking.reader import TnnModel, parse_model, read_model
from fakes.tnn_checking.reference import run_model

__all__ = ["TnnModel", "parse_model", "read_model", "run_model"]
