"""The guide (docs/, mkdocs.yml) cannot drift from the code: the generated reference pages are what
scripts/docs_reference.py writes from the code today, every page is in the site's nav, and every option that the
README or a docs page puts on a ``pytest`` or ``roofline`` command line exists. (Every repository path the prose
cites is tests/unit/test_prose_paths.py; ``mkdocs build --strict`` is `make docs`, a stage of .ci/run.)"""

from __future__ import annotations

import importlib.util
import re
from typing import Any

import pytest
import yaml
from support.paths import REPO

DOCS = REPO / "docs"
PROSE = [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("docs_reference", REPO / "scripts" / "docs_reference.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("page", ["quantities.md", "fields.md", "pytest-options.md", "cli.md", "results-records.md"])
def test_generated_reference_page_matches_the_code(page: str) -> None:
    gen = _generator()
    committed = (DOCS / "reference" / page).read_text(encoding="utf-8")
    assert committed == gen.PAGES[page](), (
        f"docs/reference/{page} is stale: run `.venv/bin/python scripts/docs_reference.py` and commit it")


def test_generated_pages_hold_what_they_are_generated_from() -> None:
    """Independent of the renderer: a quantity, a field, a pytest option and a CLI flag picked by hand appear."""
    ref = DOCS / "reference"
    assert "| `ttft_p99` | time | measured |" in (ref / "quantities.md").read_text(encoding="utf-8")
    assert "| `calibration` |" in (ref / "fields.md").read_text(encoding="utf-8")
    assert "`--roofline-gpu`, `--gpu`" in (ref / "pytest-options.md").read_text(encoding="utf-8")
    cli = (ref / "cli.md").read_text(encoding="utf-8")
    assert "## `roofline check`" in cli and "`--limit`" in cli


def _nav_files(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [f for item in node for f in _nav_files(item)]
    if isinstance(node, dict):
        return [f for v in node.values() for f in _nav_files(v)]
    return []


def test_every_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = _nav_files(config["nav"])
    assert len(nav) == len(set(nav))
    missing = [f for f in nav if not (DOCS / f).is_file()]
    assert not missing, missing
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert pages == set(nav), f"pages not in mkdocs.yml's nav: {sorted(pages - set(nav))}"


def _pytest_options(config: pytest.Config) -> set[str]:
    parser = config._parser  # pytest's own, with every plugin loaded here (xdist, html, this one)
    names = {n for o in parser._anonymous.options for n in o.names()}
    names |= {n for g in parser._groups for o in g.options for n in o.names()}
    return names


def _roofline_flags() -> dict[str, set[str]]:
    gen = _generator()
    return {name: {s for a in p._actions for s in a.option_strings} for name, p, _h in gen.cli_commands()}


# a command line the prose shows: `pytest ...` or `roofline CMD ...`, inside backticks or on a line of a code block
_COMMAND = re.compile(r"(?:^|`|\$ |\| )((?:python -m )?(?:pytest|roofline)\b[^`|\n]*)")
_FLAG = re.compile(r"(?<![\w-])(--[a-z][\w-]*)")


def _commands() -> list[tuple[str, str]]:
    out = []
    for doc in PROSE:
        for lineno, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for m in _COMMAND.finditer(line):
                out.append((f"{doc.relative_to(REPO)}:{lineno}", m.group(1).split("#")[0]))
    return out


def test_every_option_on_a_documented_command_line_exists(pytestconfig: pytest.Config) -> None:
    pytest_opts = _pytest_options(pytestconfig)
    assert "--gpu" in pytest_opts and "--roofline-history" in pytest_opts and "--html" in pytest_opts
    flags = _roofline_flags()
    commands = _commands()
    assert len(commands) > 50  # the prose does show commands
    unknown = []
    for where, cmd in commands:
        words = cmd.split()
        if words[0] == "python":
            words = words[2:]
        if words[0] == "roofline":
            if len(words) < 2 or words[1] not in flags:
                continue  # "roofline" as a word, not a command line
            known = flags[words[1]]
        else:
            known = pytest_opts
        for flag in _FLAG.findall(" ".join(words[1:])):
            if flag.split("=")[0] not in known:
                unknown.append(f"{where}: {flag} in `{cmd.strip()}`")
    assert not unknown, "options the docs name that do not exist:\n" + "\n".join(unknown)


def test_every_roofline_option_named_anywhere_exists(pytestconfig: pytest.Config) -> None:
    """``--roofline-*`` outside a command line (a table, a sentence) is still the plugin's option."""
    known = _pytest_options(pytestconfig) | {s for f in _roofline_flags().values() for s in f}
    named = {(doc.relative_to(REPO).as_posix(), m) for doc in PROSE
             for m in re.findall(r"(?<![\w-])(--(?:no-)?roofline-[\w-]+)", doc.read_text(encoding="utf-8"))}
    unknown = sorted(f"{where}: {flag}" for where, flag in named if flag not in known)
    assert not unknown, unknown
