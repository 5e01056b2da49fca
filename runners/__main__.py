"""``python -m edgebench.runners ARG`` (on the host) runs the runner: see runner.py."""

import sys

from .runner import main

sys.exit(main())
