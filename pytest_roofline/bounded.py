"""The one bounded way to read a document someone else wrote: a file's bytes, its UTF-8 text, JSON and YAML.

Every reader of another tool's or a person's file (results files, replays, peers' files, calibration files,
datasets, the history) goes through here, so one hostile file cannot hang the run or exhaust its memory:

* :func:`read_bytes` refuses what is not a regular file (a FIFO would block the open forever, ``/dev/zero`` never
  ends) and a file over ``max_bytes`` — checked before it is read, and again while reading (a file that grows);
* :func:`decode_utf8` names the line and column of the first byte that is not UTF-8 (a UTF-16 file says so);
* :func:`loads_json` refuses a document nested deeper than ``max_depth`` (Python's JSON reader recurses, so
  100,000 nested ``[`` is a ``RecursionError`` in it; here it is one clear error, and the parsed value is walked
  iteratively, so nothing downstream recurses deeper than ``max_depth``);
* :func:`iter_lines` streams a file line by line in bounded memory, each line at most ``max_line_bytes``, with
  the sha256 of what it read (a 1 GB JSONL dataset is read in linear time and a line's memory);
* :func:`safe_load_yaml` is PyYAML's safe loader counting as it composes: nesting depth, recursive aliases and
  the number of nodes with every alias expanded — an alias bomb is refused when it is counted, never expanded.

Errors are :class:`~pytest_roofline.errors.BoundedInputError` (a ``ValueError``) naming the file (and line where
there is one) and the fix. This module imports only ``errors`` and ``units`` from the package (layer 1).
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from pytest_roofline.errors import BoundedInputError
from pytest_roofline.units import MIB

__all__ = [
    "MIB",
    "json_syntax_error",
    "MAX_DEPTH",
    "MAX_DOCUMENT_BYTES",
    "MAX_YAML_NODES",
    "check_file",
    "read_bytes",
    "decode_utf8",
    "loads_json",
    "load_json_file",
    "check_depth",
    "iter_lines",
    "LineReader",
    "safe_load_yaml",
    "load_yaml_file",
]


#: how deeply a JSON or YAML document read here may nest (results files, peers' files, calibration files and
#: history runs nest fewer than ten levels)
MAX_DEPTH = 64
#: the largest document read whole (a results file or a peer's export); a 120 MB vllm bench file reads in ~14 s
MAX_DOCUMENT_BYTES = 512 * MIB
#: YAML nodes once every alias is expanded (a hand-edited calibration file holds a few hundred)
MAX_YAML_NODES = 100_000


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _check_regular(path: Path, what: str) -> os.stat_result:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise BoundedInputError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise BoundedInputError(
            f"{path}: {what} is {_kind(st.st_mode)}, not a regular file", hint="give the path of a file saved on disk"
        )
    return st


def _too_big(path: Path | str, what: str, max_bytes: int, size: int | None = None) -> BoundedInputError:
    got = f" ({size / MIB:,.1f} MiB)" if size is not None else ""
    return BoundedInputError(
        f"{path}: {what} is larger than {max_bytes / MIB:,.0f} MiB{got}; it is not read",
        hint="a file this large is not one this project writes or reads; check the path",
    )


def check_file(
    path: str | os.PathLike[str], *, max_bytes: int = MAX_DOCUMENT_BYTES, what: str = "the file"
) -> os.stat_result:
    """Refuse, before opening it, what is not a regular file or is over ``max_bytes``; its ``stat`` otherwise."""
    p = Path(path)
    st = _check_regular(p, what)
    if st.st_size > max_bytes:
        raise _too_big(p, what, max_bytes, st.st_size)
    return st


def read_bytes(path: str | os.PathLike[str], *, max_bytes: int = MAX_DOCUMENT_BYTES, what: str = "the file") -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; :class:`BoundedInputError` otherwise."""
    p = Path(path)
    check_file(p, max_bytes=max_bytes, what=what)
    try:
        with open(p, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise BoundedInputError(f"{p}: cannot read {what} ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise _too_big(p, what, max_bytes)
    return data


def decode_utf8(data: bytes, source: str) -> str:
    """``data`` as UTF-8 text (a leading UTF-8 BOM dropped); the first bad byte's line and column otherwise."""
    for bom, name in (
        (codecs.BOM_UTF32_LE, "UTF-32"),
        (codecs.BOM_UTF32_BE, "UTF-32"),
        (codecs.BOM_UTF16_LE, "UTF-16"),
        (codecs.BOM_UTF16_BE, "UTF-16"),
    ):
        if data.startswith(bom):
            raise BoundedInputError(
                f"{source}: the file is {name} (it starts with a {name} byte-order mark), not UTF-8",
                line=1,
                hint="save it as UTF-8",
            )
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise BoundedInputError(
            f"{source}:{line}: byte 0x{data[exc.start]:02x} at column {column} is not UTF-8 ({exc.reason})",
            line=line,
            hint="save the file as UTF-8",
        ) from None


def check_depth(value: Any, source: str, max_depth: int = MAX_DEPTH) -> None:
    """Refuse a parsed value whose lists and mappings nest deeper than ``max_depth`` (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > max_depth:
            raise BoundedInputError(
                f"{source}: lists and objects nest more than {max_depth} levels deep",
                hint="no file this project reads nests that deep; is it the right file?",
            )
        if isinstance(v, dict):
            stack.extend((c, depth + 1) for c in v.values() if isinstance(c, (dict, list)))
        elif isinstance(v, list):
            stack.extend((c, depth + 1) for c in v if isinstance(c, (dict, list)))


def loads_json(text: str | bytes, source: str, *, max_depth: int = MAX_DEPTH, line: int | None = None) -> Any:
    """``json.loads`` bounded in depth. A syntax error is a ``json.JSONDecodeError`` as before (callers word it);
    a document nested deeper than ``max_depth`` is a :class:`BoundedInputError`."""
    try:
        value = json.loads(text)
    except RecursionError:
        where = f"{source}:{line}" if line else source
        raise BoundedInputError(
            f"{where}: lists and objects nest more than {max_depth} levels deep (too deep to read)",
            line=line,
            hint="no file this project reads nests that deep; is it the right file?",
        ) from None
    check_depth(value, f"{source}:{line}" if line else source, max_depth)
    return value


def json_syntax_error(exc: json.JSONDecodeError, where: str, *, line: int | None = None) -> str:
    """A JSON syntax error worded for a person: ``where:line: not valid JSON (msg)``, and where the text ends before
    its JSON closes (the error at its last byte, or a string never closed), that the file was cut short: an
    interrupted write or copy leaves that, and "line 1: Expecting ','" of a one-line file said nothing (trial
    s25b #7). ``line``: the file's line the text was (a JSON-lines file), else the error's own."""
    text = exc.doc if isinstance(exc.doc, str) else ""
    end = len(text.rstrip())
    if text and (exc.pos >= end - 1 or exc.msg.startswith("Unterminated string")):
        return (f"{where}: not valid JSON: the text ends (byte {len(text.encode('utf-8')):,}) before its JSON "
                f"closes ({exc.msg}): the file was cut short, by an interrupted write or copy? Write or copy it again")
    return f"{where}:{line or exc.lineno}: not valid JSON ({exc.msg})"


def load_json_file(
    path: str | os.PathLike[str],
    *,
    what: str = "the file",
    max_bytes: int = MAX_DOCUMENT_BYTES,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """A JSON file read whole under the size, UTF-8 and depth bounds (``json.JSONDecodeError`` as ``json``)."""
    p = Path(path)
    return loads_json(decode_utf8(read_bytes(p, max_bytes=max_bytes, what=what), str(p)), str(p), max_depth=max_depth)


class LineReader:
    """A file read line by line in bounded memory: :meth:`lines` yields ``(line number, text)`` with each line's
    bytes at most ``max_line_bytes`` and UTF-8 checked; ``sha256`` is the digest of the bytes read so far (of
    the whole file once :meth:`lines` is exhausted)."""

    def __init__(self, path: str | os.PathLike[str], *, what: str = "the file", max_line_bytes: int = 64 * MIB):
        self.path = Path(path)
        self.what = what
        self.max_line_bytes = max_line_bytes
        self._sha = hashlib.sha256()
        _check_regular(self.path, what)

    @property
    def sha256(self) -> str:
        return self._sha.hexdigest()

    def lines(self) -> Iterator[tuple[int, str]]:
        try:
            f = open(self.path, "rb")  # noqa: SIM115 - closed below, across yields
        except OSError as exc:
            raise BoundedInputError(f"{self.path}: cannot read {self.what} ({exc.strerror or exc})") from None
        with f:
            lineno = 0
            while True:
                raw = f.readline(self.max_line_bytes + 1)
                if not raw:
                    return
                lineno += 1
                self._sha.update(raw)
                if len(raw) > self.max_line_bytes and not raw.endswith(b"\n"):
                    raise BoundedInputError(
                        f"{self.path}:{lineno}: a line longer than {self.max_line_bytes / MIB:,.0f} MiB",
                        line=lineno,
                        hint=f"{self.what} holds one record a line; is it the right file?",
                    )
                if lineno == 1:
                    for bom, name in ((codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16")):
                        if raw.startswith(bom):
                            raise BoundedInputError(
                                f"{self.path}: the file is {name} (it starts with a {name} byte-order mark), not UTF-8",
                                line=1,
                                hint="save it as UTF-8",
                            )
                    if raw.startswith(codecs.BOM_UTF8):
                        raw = raw[len(codecs.BOM_UTF8) :]
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise BoundedInputError(
                        f"{self.path}:{lineno}: byte 0x{raw[exc.start]:02x} at column "
                        f"{exc.start + 1} is not UTF-8 ({exc.reason})",
                        line=lineno,
                        hint="save the file as UTF-8",
                    ) from None
                yield lineno, text


def iter_lines(
    path: str | os.PathLike[str], *, what: str = "the file", max_line_bytes: int = 64 * MIB
) -> Iterator[tuple[int, str]]:
    """:meth:`LineReader.lines` of ``path`` (when the digest is not needed)."""
    return LineReader(path, what=what, max_line_bytes=max_line_bytes).lines()


class CountingYamlLoader(yaml.SafeLoader):
    """PyYAML's safe loader, counting while it composes: nesting depth, recursive aliases and the number of nodes
    with every alias expanded, so an alias bomb is refused when it is counted, never expanded. The one home of that
    counting: :func:`safe_load_yaml` uses it for other people's YAML, and the prediction-file reader
    (``format/_reader.py``) subclasses it with its own limits, error type and hints (the ``*_error`` methods)."""

    def __init__(self, stream: str, *, max_nodes: int, max_depth: int):
        super().__init__(stream)
        self.max_nodes, self.max_depth = max_nodes, max_depth
        self._depth = 0
        self._open: list[str] = []  # anchors of the collections being composed
        self._sizes: dict[int, int] = {}  # id(node) -> its node count with aliases expanded

    def _error(self, mark: Any, message: str, hint: str) -> Exception:
        raise NotImplementedError

    def depth_error(self, mark: Any) -> Exception:
        return self._error(mark, f"mappings and lists nest more than {self.max_depth} levels deep",
                           "flatten this value")

    def recursive_alias_error(self, mark: Any, anchor: str) -> Exception:
        return self._error(mark, f"the alias *{anchor} is inside its own anchor &{anchor} (a recursive alias has "
                           "no end)", "copy the values instead")

    def nodes_error(self, mark: Any, size: int) -> Exception:
        return self._error(mark, f"this value holds more than {self.max_nodes:,} YAML nodes once its aliases are "
                           f"expanded ({size:,}; an alias bomb?)", "copy the values, without aliases")

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:  # noqa: N803 - PyYAML's name
        # refused while scanning: PyYAML's scanner does work per open flow level for every token (quadratic)
        if self.flow_level >= self.max_depth:
            raise self.depth_error(self.get_mark())
        super().fetch_flow_collection_start(TokenClass)

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self._open:
                self.get_event()
                raise self.recursive_alias_error(event.start_mark, event.anchor)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > self.max_depth:
            raise self.depth_error(event.start_mark)
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._open.append(anchor)
        try:
            node: Any = super().compose_node(parent, index)
        finally:
            self._depth -= 1
            if anchor is not None:
                self._open.pop()
        if isinstance(node, yaml.SequenceNode):
            size = 1 + sum(self._sizes.get(id(c), 1) for c in node.value)
        elif isinstance(node, yaml.MappingNode):
            size = 1 + sum(self._sizes.get(id(k), 1) + self._sizes.get(id(v), 1) for k, v in node.value)
        else:
            size = 1
        self._sizes[id(node)] = size
        if size > self.max_nodes:
            raise self.nodes_error(node.start_mark, size)
        return node


class _BoundedYamlLoader(CountingYamlLoader):
    """Other people's YAML (calibration files): a :class:`BoundedInputError` naming the source and line."""

    def __init__(self, stream: str, source: str, max_nodes: int, max_depth: int):
        super().__init__(stream, max_nodes=max_nodes, max_depth=max_depth)
        self.source = source

    def _error(self, mark: Any, message: str, hint: str) -> BoundedInputError:
        line = mark.line + 1 if mark is not None else None
        return BoundedInputError(
            f"{self.source}:{line}: {message}" if line else f"{self.source}: {message}", line=line, hint=hint
        )


def safe_load_yaml(text: str, source: str, *, max_nodes: int = MAX_YAML_NODES, max_depth: int = MAX_DEPTH) -> Any:
    """``yaml.safe_load`` bounded in depth and in nodes with aliases expanded; ``yaml.YAMLError`` as PyYAML for a
    document that does not parse, :class:`BoundedInputError` for one over a bound."""
    loader = _BoundedYamlLoader(text, source, max_nodes, max_depth)
    try:
        return loader.get_single_data()
    except RecursionError:
        raise BoundedInputError(f"{source}: the YAML nests too deeply to be read", hint="flatten it") from None
    finally:
        loader.dispose()


def load_yaml_file(
    path: str | os.PathLike[str],
    *,
    what: str = "the file",
    max_bytes: int = 16 * MIB,
    max_nodes: int = MAX_YAML_NODES,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """A YAML file read whole under the size, UTF-8, depth and alias bounds."""
    p = Path(path)
    text = decode_utf8(read_bytes(p, max_bytes=max_bytes, what=what), str(p))
    return safe_load_yaml(text, str(p), max_nodes=max_nodes, max_depth=max_depth)
