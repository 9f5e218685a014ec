"""The README stays a page: at most 250 lines, the two commands CI runs, links that find their targets; every
quantity and glossary entry of the code is in the guide's generated reference (tests/unit/test_docs_site.py)."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_a_page_not_a_manual() -> None:
    assert len(README.splitlines()) <= 250


def test_every_quantity_and_glossary_entry_is_in_the_generated_reference() -> None:
    from pytest_roofline.measure import stats
    from pytest_roofline.quantities import registry as quantities

    page = (REPO / "docs" / "reference" / "quantities.md").read_text(encoding="utf-8")
    missing = [name for name in quantities.QUANTITIES if f"`{name}`" not in page]
    assert not missing, f"docs/reference/quantities.md lacks {missing}"
    for name, text in stats.GLOSSARY.items():
        assert f"- **{name}** — {text}" in page, f"the glossary entry for {name} is stale"


def test_the_two_commands_and_the_ci_agree() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    assert "make demo" in README and "make test" in README and "make docs" in README
    assert "make test" in ci and "make docs" in ci


def test_every_link_to_a_heading_finds_it() -> None:
    """Each ``[text](#anchor)`` names a heading of the README (GitHub's anchors: lower case, punctuation dropped,
    spaces to hyphens), so a renamed section cannot leave a dead link."""
    anchors = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
               for h in re.findall(r"^#+ (.*)$", README, re.M)}
    dead = sorted(a for a in re.findall(r"\]\(#([^)]+)\)", README) if a not in anchors)
    assert not dead, dead


def test_every_relative_link_finds_its_file() -> None:
    links = [t.split("#")[0] for t in re.findall(r"\]\(([^)#][^)]*)\)", README) if not t.startswith("http")]
    assert len(links) > 10
    dead = sorted(t for t in links if not (REPO / t).exists())
    assert not dead, dead
