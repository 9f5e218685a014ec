"""Repository-wide test set-up.

pytester's in-process runs (``runpytest`` without ``_subprocess``) snapshot ``sys.modules`` and drop every module
first imported during the run. If httpcore were first imported inside such a run, httpx would keep mapping
exceptions against that dropped module's classes, and a later ``httpcore.ConnectError`` would escape httpx's
``HTTPError`` (seen in a full CI run: the engine tests' readiness polling crashed with "Connection refused").
Importing both here puts them in every snapshot's baseline.
"""

import httpcore  # noqa: F401
import httpx  # noqa: F401

# the same for the project's own modules that the plugin imports lazily (engine state, atexit hooks)
import pytest_roofline.measure.engine  # noqa: F401,E402
import pytest_roofline.measure.engine.metrics  # noqa: F401,E402
import pytest_roofline.measure.loadgen  # noqa: F401,E402
import pytest_roofline.measure.sweep  # noqa: F401,E402

# the plugin's working half: its entry module imports it only once a run has predictions (pytest_plugin/plugin.py)
import pytest_roofline.pytest_plugin.active  # noqa: F401,E402
import pytest_roofline.report.scorecard  # noqa: F401,E402
