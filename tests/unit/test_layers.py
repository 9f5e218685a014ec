"""The architecture, enforced: every import in the package (top-level and function-local alike) points down
the layers drawn in docs/architecture.md, no two modules import each other through any chain, and only the
pytest glue imports pytest."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG_DIR = Path(__file__).resolve().parents[2] / "pytest_roofline"
PKG = "pytest_roofline"

#: the layers, bottom first; a module may import its own layer and the ones below
LAYERS: list[tuple[str, ...]] = [
    ("errors", "units", "redact", "bounded"),
    ("model",),
    ("quantities",),
    ("format",),
    ("measure",),
    ("scoring",),
    ("history",),
    ("report",),
    ("pytest_plugin", "cli"),
]
#: third-party modules that do I/O or belong to a test framework, and the layers that may import them
ALLOWED_THIRD_PARTY = {
    "pytest": {"pytest_plugin"},
    "_pytest": {"pytest_plugin"},
    "pytest_metadata": {"pytest_plugin"},
    "httpx": {"measure"},
    "httpcore": {"measure"},
    "prometheus_client": {"measure"},
    "socket": {"measure"},
    "subprocess": {"measure"},
    "sqlalchemy": {"history"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for f in sorted(PKG_DIR.rglob("*.py")):
        parts = list(f.relative_to(PKG_DIR).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join([PKG, *parts])] = f
    return out


MODULES = _modules()


def _imports(path: Path, modname: str) -> list[tuple[str, int]]:
    """(imported module, line) for every import statement anywhere in the file, resolved to package modules
    where the target is one (``from pkg.sub import name`` is the submodule when ``name`` is one)."""
    is_pkg = path.name == "__init__.py"
    base = modname.split(".") if is_pkg else modname.split(".")[:-1]
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - node.level + 1]
                mod = ".".join(anchor + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:
                sub = f"{mod}.{a.name}"
                found.append((sub if sub in MODULES else mod, node.lineno))
    return found


def _layer(modname: str) -> int | None:
    if modname == PKG:
        return None
    head = modname.split(".")[1]
    for rank, names in enumerate(LAYERS):
        if head in names:
            return rank
    raise AssertionError(f"{modname} belongs to no layer: add it to LAYERS here and to docs/architecture.md")


def _head(modname: str) -> str:
    return modname.split(".")[1] if modname != PKG else ""


def test_every_module_has_a_layer() -> None:
    for mod in MODULES:
        _layer(mod)


def test_imports_point_down() -> None:
    bad = []
    for mod, path in MODULES.items():
        src_rank = _layer(mod)
        for target, line in _imports(path, mod):
            if target == PKG or target.startswith(PKG + "."):
                if mod == PKG:
                    continue  # the package's public API re-exports from every layer
                if target == PKG:
                    bad.append(f"{path.name}:{line} imports the package root (import the module itself)")
                    continue
                dst_rank = _layer(target)
                assert src_rank is not None and dst_rank is not None
                if dst_rank > src_rank:
                    bad.append(f"{mod}:{line} -> {target} (layer {_head(mod)} may not import {_head(target)})")
            else:
                top = target.split(".")[0]
                allowed = ALLOWED_THIRD_PARTY.get(top)
                if allowed is not None and mod != PKG and _head(mod) not in allowed:
                    bad.append(f"{mod}:{line} imports {top} (only {sorted(allowed)} may)")
    assert not bad, "imports that point up a layer:\n" + "\n".join(bad)


def test_no_import_cycle() -> None:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for mod, path in MODULES.items():
        if mod == PKG:
            continue
        for target, _ in _imports(path, mod):
            if target in MODULES and target != mod and target != PKG:
                # importing pkg.sub also runs pkg/__init__: an edge to every package on the way
                graph[mod].add(target)
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    sccs: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert not sccs, f"import cycles: {sccs}"


@pytest.mark.parametrize("bad_src, expected", [
    ("from pytest_roofline.report import charts\n", "layer model may not import report"),
    ("import pytest\n", "imports pytest"),
])
def test_the_checker_catches_an_upward_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad_src: str,
                                              expected: str) -> None:
    """The check itself works: a model-layer module importing the report layer (or pytest) is reported."""
    fake = tmp_path / "bad.py"
    fake.write_text(bad_src, encoding="utf-8")
    monkeypatch.setitem(MODULES, f"{PKG}.model.bad", fake)
    with pytest.raises(AssertionError, match=expected):
        test_imports_point_down()
