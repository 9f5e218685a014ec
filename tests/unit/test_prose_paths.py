"""Every file of this repository that the prose names exists: a README, docs/ page, benchmark or test that cites
``pytest_roofline/.../x.py`` or ``tests/.../test_x.py`` sends a reader to a real file (modules and tests move;
the prose must move with them)."""

from __future__ import annotations

import re

from support.paths import REPO

PROSE = [REPO / "README.md", REPO / "tests" / "README.md", REPO / "benchmarks" / "README.md",
         *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "benchmarks").glob("RESULTS*.md"))]
# a repository path: the package's files (modules, schema, data) and the tests' and scripts' files, with or without
# a line number after it
CITED = re.compile(r"(?<![\w/.-])((?:pytest_roofline|tests|scripts)/[\w/.-]*?\.(?:py|json|yaml|css|sh))(?![\w/])")


def _cited() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for doc in PROSE:
        if not doc.is_file():
            continue
        for lineno, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for m in CITED.finditer(line):
                if line[m.end():].lstrip("`").startswith("](http"):
                    continue  # another project's file, named as the text of a link to it
                out.setdefault(m.group(1), []).append(f"{doc.relative_to(REPO)}:{lineno}")
    return out


def test_every_cited_repository_file_exists() -> None:
    cited = _cited()
    assert len(cited) > 20  # the prose does cite the code
    missing = {path: where for path, where in cited.items() if not (REPO / path).is_file()}
    assert not missing, "the prose names files that do not exist (moved or renamed?):\n" + "\n".join(
        f"{path}  ({', '.join(where[:3])})" for path, where in sorted(missing.items()))
