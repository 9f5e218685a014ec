"""The README stays true: every quantity and every glossary entry of the code is in it, verbatim."""

from pathlib import Path

from pytest_roofline.measure import stats
from pytest_roofline.quantities import registry as quantities

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def test_every_quantity_is_documented() -> None:
    missing = [name for name in quantities.QUANTITIES if f"`{name}`" not in README]
    assert not missing, f"README's quantity table lacks {missing}"


def test_glossary_is_printed_verbatim() -> None:
    for name, text in stats.GLOSSARY.items():
        assert f"- **{name}** — {text}" in README, f"README's glossary entry for {name} is stale"


def test_the_two_commands_and_the_ci_agree() -> None:
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert "make demo" in README and "make test" in README
    assert "make test" in ci
