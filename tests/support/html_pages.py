"""Reading the HTML this project writes, in tests: the scorecard page (:class:`Page`) and pytest-html's report
(:func:`parse_report`, :func:`parse_cell`, :func:`parse_fragment`), with the standard library's parser."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from pytest_roofline.report.scorecard import CSP


class Page(HTMLParser):
    """Every element with its attributes and ancestors' ids/classes, and the text — enough to query the page."""

    VOID = {"meta", "link", "img", "br", "hr", "input", "source", "col", "area", "base", "wbr"}

    def __init__(self, html: str) -> None:
        super().__init__()
        self.elements: list[dict[str, Any]] = []
        self._stack: list[dict[str, Any]] = []
        self.text_parts: list[str] = []
        self.style = ""
        self._in_style = False
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = {"tag": tag, "attrs": dict(attrs), "parents": [dict(e["attrs"]) | {"_tag": e["tag"]} for e in self._stack],
              "text": ""}
        self.elements.append(el)
        if tag == "style":
            self._in_style = True
        if tag not in self.VOID and not tag.endswith("/"):
            self._stack.append(el)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append({"tag": tag, "attrs": dict(attrs),
                              "parents": [dict(e["attrs"]) | {"_tag": e["tag"]} for e in self._stack], "text": ""})

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i]["tag"] == tag:
                del self._stack[i:]
                break

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.style += data
            return
        self.text_parts.append(data)
        for e in self._stack:
            e["text"] += data

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.text_parts).split())

    def find(self, tag: str, **attrs: str) -> list[dict[str, Any]]:
        out = []
        for e in self.elements:
            if e["tag"] != tag:
                continue
            ok = True
            for k, v in attrs.items():
                k = k.rstrip("_").replace("_", "-")
                have = e["attrs"].get(k) or ""
                if k == "class":
                    ok &= v in have.split()
                else:
                    ok &= have == v
            if ok:
                out.append(e)
        return out

    def inside(self, el: dict[str, Any], tag: str) -> list[dict[str, Any]]:
        """Elements of ``tag`` nested in ``el``."""
        i = self.elements.index(el)
        depth = len(el["parents"])
        out = []
        for e in self.elements[i + 1:]:
            if len(e["parents"]) <= depth:
                break
            if e["tag"] == tag:
                out.append(e)
        return out


def assert_self_contained(page: Page) -> None:
    metas = [m for m in page.find("meta") if (m["attrs"].get("http-equiv") or "").lower() == "content-security-policy"]
    assert len(metas) == 1 and metas[0]["attrs"]["content"] == CSP
    assert "default-src 'none'" in CSP
    assert not page.find("script") and not page.find("link") and not page.find("iframe") and not page.find("object")
    for e in page.elements:
        for k, v in e["attrs"].items():
            if k in ("src", "href", "xlink:href", "action", "poster", "data", "srcset") and v:
                assert v.startswith("#") or v.startswith("data:"), f"<{e['tag']} {k}={v!r}>"
            if k == "style" and v:
                assert "url(" not in v
    assert "@import" not in page.style and "url(" not in page.style and "@font-face" not in page.style


class _ReportParser(HTMLParser):
    """Header cells of the results table, the JSON data blob, and whether a stylesheet link is present."""

    def __init__(self) -> None:
        super().__init__()
        self.headers: list[dict[str, Any]] = []
        self.blob: str | None = None
        self.links: list[str] = []
        self._in_head = False
        self._th: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "thead" and a.get("id") == "results-table-head":
            self._in_head = True
        elif tag == "th" and self._in_head:
            self._th = {"attrs": a, "text": ""}
        elif tag == "div" and a.get("id") == "data-container":
            self.blob = a.get("data-jsonblob")
        elif tag == "link":
            self.links.append(a.get("href") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "thead":
            self._in_head = False
        elif tag == "th" and self._th is not None:
            self.headers.append(self._th)
            self._th = None

    def handle_data(self, data: str) -> None:
        if self._th is not None:
            self._th["text"] += data


class _CellParser(HTMLParser):
    """One <td>: its class, the hidden sort key and the visible text."""

    def __init__(self) -> None:
        super().__init__()
        self.cls = ""
        self.key = ""
        self.text = ""
        self._hidden = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "td":
            self.cls = a.get("class") or ""
        elif tag == "span" and "hidden" in a:
            self._hidden = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "span":
            self._hidden = False

    def handle_data(self, data: str) -> None:
        if self._hidden:
            self.key += data
        else:
            self.text += data


def parse_cell(html: str) -> _CellParser:
    p = _CellParser()
    p.feed(html)
    p.text = " ".join(p.text.split())
    return p


class _FragmentParser(HTMLParser):
    """Tags, classes and text of an HTML fragment (an extra)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text += data


def parse_fragment(html: str) -> _FragmentParser:
    p = _FragmentParser()
    p.feed(html)
    return p


def parse_report(path: Path) -> tuple[_ReportParser, dict[str, Any]]:
    p = _ReportParser()
    p.feed(path.read_text(encoding="utf-8"))
    assert p.blob is not None, "pytest-html data blob not found"
    return p, json.loads(p.blob)
