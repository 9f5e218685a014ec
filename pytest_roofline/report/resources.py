"""The report's package data: the style sheets under ``report/static/`` (pytest-html keeps its own in
``resources/``), read with :mod:`importlib.resources` so an installed wheel finds them (pyproject.toml declares
them as package data). Each page inlines what it reads here: the pages stay single self-contained files."""

from __future__ import annotations

import functools
from importlib import resources

__all__ = ["css"]


@functools.cache
def css(name: str) -> str:
    """The text of ``report/static/<name>.css``, exactly as stored."""
    return resources.files("pytest_roofline.report").joinpath("static", f"{name}.css").read_text(encoding="utf-8")
