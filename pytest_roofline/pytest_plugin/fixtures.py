"""The plugin's fixture, registered by the entry module's ``pytest_configure`` (the entry module itself does not
import pytest's API: it loads in every pytest run, predictions or not). The fixture's body is in
:func:`pytest_roofline.pytest_plugin.active.measurements`, imported when a prediction first asks for it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from pytest_roofline.measure.target import MeasurementProvider

__all__ = ["roofline_measurements"]


@pytest.fixture(scope="session")
def roofline_measurements(request: pytest.FixtureRequest) -> Iterator[MeasurementProvider]:
    """The run's measurement provider: a replayed file, or live sweeps (engines start on first use)."""
    from pytest_roofline.pytest_plugin.active import measurements

    yield from measurements(request)
