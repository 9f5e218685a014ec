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


def run_pytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """``pytester.runpytest(*args)`` (in this process) without the cache provider or pytest-html."""
    return pytester.runpytest(*NO_HTML, *args)
