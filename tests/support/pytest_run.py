"""Running pytest inside a test (pytester, or ``python -m pytest`` in a subprocess): the options those runs pass.

The inner run must neither read nor leave a ``.pytest_cache`` (``NO_CACHE``), and pytest-html, installed here, loads
in every run unless refused (``NO_HTML``, for the runs that do not look at its report).
"""

from __future__ import annotations

import pytest

#: no cache provider: nothing read from a previous run, no ``.pytest_cache`` left behind
NO_CACHE = ("-p", "no:cacheprovider")
#: no cache provider and no pytest-html
NO_HTML = (*NO_CACHE, "-p", "no:html")


#: an in-process run registers the roofline plugin for assertion rewriting again, while this process imported the
#: package already: pytest warns "Module already imported so cannot be rewritten; pytest_roofline" (when no earlier
#: in-process run in this worker imported it first: the test alone, or first on its xdist worker). A user's
#: ``pytest`` imports the plugin once and never sees it, so the inner run ignores that one warning and no other.
IN_PROCESS = ("-W", "ignore:Module already imported so cannot be rewritten; pytest_roofline:"
              "pytest.PytestAssertRewriteWarning")


def run_pytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """``pytester.runpytest(*args)`` (in this process) without the cache provider or pytest-html, and without the
    in-process harness's own rewrite warning (:data:`IN_PROCESS`)."""
    return pytester.runpytest(*NO_HTML, *args, *IN_PROCESS)  # last: it overrides a "-W error" in args
