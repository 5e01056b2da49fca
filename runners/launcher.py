"""The device's entry script, pushed as ``<work_dir>/runner/runner.py`` beside the runner
package, pushed as ``<work_dir>/runner/edgebench_runner/``: Python puts this script's folder
first on ``sys.path``, so the package imports by its name. ``python3 runner.py ARG``."""

import sys

from edgebench_runner.runner import main

sys.exit(main())
