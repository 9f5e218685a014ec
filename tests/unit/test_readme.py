"""The README stays true: every quantity and every glossary entry of the code is in it, verbatim."""

from pathlib import Path

from pytest_roofline.measure import stats
from pytest_roofline.quantities import registry as quantities

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def test_every_quantity_is_documented() -> None:
    missing = [name for name in quantities.QUANTITIES if f"`{name}`" not in README]
    assert not missing, f"README's quantity table lacks {missing}"


def test_glossary_is_printed_verbatim() -> None:
    for name, text in stats.GLOSSARY.items():
        assert f"- **{name}** — {text}" in README, f"README's glossary entry for {name} is stale"


def test_the_two_commands_and_the_ci_agree() -> None:
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text()
    assert "make demo" in README and "make test" in README
    assert "make test" in ci


def test_every_link_to_a_heading_finds_it() -> None:
    """Each ``[text](#anchor)`` names a heading of the README (GitHub's anchors: lower case, punctuation dropped,
    spaces to hyphens), so a renamed section cannot leave a dead link."""
    import re

    text = README
    anchors = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
               for h in re.findall(r"^#+ (.*)$", text, re.M)}
    dead = sorted(a for a in re.findall(r"\]\(#([^)]+)\)", text) if a not in anchors)
    assert not dead, dead
