"""The bounded YAML node reader: bytes to text, text to nodes, nodes to checked values with file:line errors.

:func:`decode` (UTF-8 only, the line of a bad byte), :func:`compose` (PyYAML's safe composer via
:class:`_LimitedLoader`, counting depth, recursive aliases and expanded nodes as it composes, so an alias bomb is
refused before it is expanded) and :class:`NodeReader`, which turns one node into a mapping, a string, a number,
a value with its unit or free-form plain data (:func:`plain_scalar`: the one typing rule for ``engine.args`` and
``roofline --set``), each refusal a :class:`~pytest_roofline.errors.SpecError` at the node's line.
"""

from __future__ import annotations

import codecs
import difflib
import re
from collections.abc import Mapping
from typing import Any, TypeVar

import yaml

from pytest_roofline.bounded import CountingYamlLoader
from pytest_roofline.errors import SpecError
from pytest_roofline.format._fields import BOOL_TRAPS, TOP_FIELDS, F
from pytest_roofline.format.limits import DEFAULT_LIMITS, MAX_DEPTH, Limits, how_to_raise
from pytest_roofline.units import GB, GIB, KB, KIB, MB, MIB, UnitError, parse_number, parse_printed_number, parse_value

__all__ = [
    "NodeReader", "AmbiguousScalar", "plain_scalar", "did_you_mean", "example_of", "ctx_map_check", "decode",
    "compose",
]

W = TypeVar("W", bound=str)


class NodeReader:
    def __init__(self, file: str, limits: Limits = DEFAULT_LIMITS):
        self.file = file
        self.limits = limits

    def err(self, node: yaml.Node | None, message: str, hint: str = "") -> SpecError:
        line = node.start_mark.line + 1 if node is not None else None
        return SpecError(message, file=self.file, line=line, hint=hint)

    def mapping(self, node: yaml.Node, what: str,
                fields: Mapping[str, F] | None) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.err(node, f"{what} must be a mapping (key: value lines)", _hint_for(fields))
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode):
                raise self.err(k, f"{what}: keys must be plain words")
            key = k.value
            if key in out:
                raise self.err(k, f"{what}: key {key!r} appears twice", "remove one of them")
            if fields is not None and key not in fields:
                if fields is not TOP_FIELDS and key in TOP_FIELDS and not did_you_mean(key, fields).startswith("did"):
                    # a file-level key written one level down (trial s26b L15: `model_column:` on a prediction got
                    # the list of prediction keys and nothing more)
                    own = (f"; for this prediction alone write it under its setup: (setup: {{{key}: ...}})"
                           if key in _SETUP_KEYS and what == "prediction" else "")
                    raise self.err(k, f"{what}: unknown key {key!r}",
                                   f"{key}: is a key of the file's top level (it applies to every prediction): move "
                                   f"it there, unindented{own}")
                raise self.err(k, f"{what}: unknown key {key!r}", did_you_mean(key, fields))
            out[key] = (k, v)
        if fields is not None:
            for name, f in fields.items():
                if f.required and name not in out:
                    raise self.err(node, f"{what}: missing required key {name!r}", f"add `{name}:` — {f.doc}")
        return out

    def scalar(self, node: yaml.Node, what: str) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise self.err(node, f"{what} must be a single value, "
                                 f"not a {'list' if isinstance(node, yaml.SequenceNode) else 'mapping'}")
        return str(node.value)

    def text(self, node: yaml.Node, what: str) -> str:
        """A scalar that is read as a number, a unit or a tolerance: at most ``limits.max_value_length`` long."""
        text = self.scalar(node, what)
        if len(text) > self.limits.max_value_length:
            raise self.err(node, f"{what}: a value of {len(text):,} characters is longer than max_value_length "
                                 f"({self.limits.max_value_length:,}); a number with its unit is a few characters",
                           how_to_raise("max_value_length"))
        return text

    def string(self, node: yaml.Node, what: str, enum: tuple[str, ...] = ()) -> str:
        text = self.scalar(node, what)
        if enum and text not in enum:
            raise self.err(node, f"{what}: {text!r} is not one of {', '.join(enum)}", did_you_mean(text, enum))
        return text

    def word(self, node: yaml.Node, what: str, choices: tuple[W, ...]) -> W:
        """One of ``choices`` (a kind's words, e.g. ``XFAIL_CHECKS``), typed as the kind."""
        return choices[choices.index(self.string(node, what, choices))]

    def boolean(self, node: yaml.Node, what: str) -> bool:
        text = self.scalar(node, what).strip()
        if text.lower() == "true":
            return True
        if text.lower() == "false":
            return False
        if text.lower() in BOOL_TRAPS:
            raise self.err(node, f"{what}: {text!r} is ambiguous (YAML 1.1 reads it as a boolean, other parsers as a "
                                 "string)", "write true or false")
        raise self.err(node, f"{what}: expected true or false, got {text!r}", "write true or false")

    def number(self, node: yaml.Node, what: str) -> float:
        text = self.text(node, what)
        try:
            value, _half, unit = parse_number(text)
        except UnitError:
            raise self.err(node, f"{what}: {text!r} is not a number", "write e.g. 1024, 1,024, 0.9 or 8.0e9") from None
        if unit:
            multiplier = _SHORTHAND_MULTIPLIERS.get(unit)
            if multiplier is not None:  # 2k: say what it stands for, both ways people mean it
                dec, binary = value * multiplier[0], value * multiplier[1]
                fix = f"write the number itself: {dec:,.0f} (or {binary:,.0f} if '{unit}' meant a power of 2)"
            else:
                fix = f"write the number alone, without {unit[:40]!r}: {value:g}"
            raise self.err(node, f"{what}: expected a bare number, got unit {unit[:40]!r}", fix)
        return value

    def integer(self, node: yaml.Node, what: str) -> int:
        """A whole number, exact as written: ``9223372036854775807`` stays that (a float would make it ...808)."""
        v = self.number(node, what)
        exact = parse_printed_number(self.scalar(node, what).strip())
        if isinstance(exact, int):
            return exact
        if not float(v).is_integer():
            raise self.err(node, f"{what}: expected a whole number, got {v:g}")
        return int(v)

    def value(self, node: yaml.Node, what: str, dimension: str) -> float:
        text = self.text(node, what)
        try:
            return parse_value(text, dimension).si
        except UnitError as exc:
            raise self.err(node, f"{what}: {exc}", f"write e.g. {example_of(dimension)}") from None

    def plain(self, node: yaml.Node) -> Any:
        """Plain data for free-form mappings (engine args, env, sampling); scalars keep YAML 1.2-ish typing."""
        if isinstance(node, yaml.MappingNode):
            for k, _v in node.value:
                if not isinstance(k, yaml.ScalarNode):
                    raise self.err(k, "keys must be plain words, not a list or a mapping")
            return {k.value: self.plain(v) for k, v in node.value}
        if isinstance(node, yaml.SequenceNode):
            return [self.plain(v) for v in node.value]
        text = node.value
        if isinstance(node, yaml.ScalarNode) and node.style in ("'", '"'):
            return text
        try:
            return plain_scalar(text)
        except AmbiguousScalar as exc:
            raise self.err(node, str(exc), "write true or false, or quote it") from None


class AmbiguousScalar(ValueError):
    """A plain scalar YAML 1.1 would read as a boolean (``yes``, ``off``, ...): refused, never guessed."""


def plain_scalar(text: str) -> Any:
    """An unquoted scalar of a free-form mapping (engine args, env, sampling), typed YAML 1.2-ish: true/false, null
    (``~``, empty), a bare number (``8,192`` an int, ``1e3``/``0.5`` a float), else the text itself: ``4GiB``
    and ``none`` stay strings, for vLLM to read. The one rule for the YAML reader and ``roofline ... --set``
    (:class:`AmbiguousScalar` for ``yes``/``no``/``on``/``off``/``y``/``n``)."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "~", ""):
        return None
    if low in BOOL_TRAPS:
        raise AmbiguousScalar(f"{text!r} is ambiguous (YAML 1.1 reads it as a boolean)")
    try:
        v, _h, unit = parse_number(text)
        if not unit:
            digits = text.strip()
            # a whole number is read exactly (float() would round 9223372036854775807 up to ...808)
            return int(re.sub(r"[,_]", "", digits)) if re.fullmatch(r"[-+]?[\d,_]+", digits) else v
    except UnitError:
        pass
    return text


#: the shorthand multipliers people write after a count (``2k`` tokens): the decimal and the binary reading
_SHORTHAND_MULTIPLIERS: dict[str, tuple[int, int]] = {
    "k": (KB, KIB), "K": (KB, KIB), "M": (MB, MIB), "G": (GB, GIB),
}


#: the file-level sections a prediction's own ``setup:`` may override (format/_types.py Prediction.setup)
_SETUP_KEYS = frozenset({"hardware", "model", "engine", "workload"})


def did_you_mean(word: str, options: Mapping[str, Any] | tuple[str, ...] | list[str]) -> str:
    names = list(options)
    close = difflib.get_close_matches(word, names, n=3, cutoff=0.5)
    if close:
        return f"did you mean {' or '.join(repr(c) for c in close)}?"
    return "known keys: " + ", ".join(names)


def _hint_for(fields: Mapping[str, F] | None) -> str:
    return ("keys: " + ", ".join(fields)) if fields else ""


def example_of(dimension: str) -> str:
    return {"throughput": "1,742 tok/s", "time": "500 ms", "bytes": "56.34 GiB", "bandwidth": "2,039 GB/s",
            "flops": "16.4 GFLOP", "flop_rate": "312 TFLOP/s", "intensity": "153 FLOP/byte", "ratio": "75% or 0.75",
            "count": "22,959", "request_rate": "50 req/s"}.get(dimension, "a number")



def ctx_map_check(ctx: NodeReader, node: yaml.Node, what: str) -> yaml.Node:
    if not isinstance(node, yaml.MappingNode):
        raise ctx.err(node, f"{what} must be a mapping")
    return node


def decode(data: bytes, file: str) -> str:
    """The file's text; a file that is not UTF-8 is a SpecError at the line of its first bad byte."""
    for bom, name in ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
                      (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16")):
        if data.startswith(bom):
            raise SpecError(f"the file is {name} (it starts with a {name} byte-order mark); prediction files are "
                            "UTF-8", file=file, line=1, hint="save it as UTF-8 (in most editors: 'Save with "
                            "encoding' → UTF-8)")
    if data.startswith(codecs.BOM_UTF8):  # a UTF-8 BOM is allowed at the start of a YAML stream (YAML 1.2, 5.2)
        data = data[len(codecs.BOM_UTF8):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SpecError(f"byte 0x{data[exc.start]:02x} at column {column} is not UTF-8 ({exc.reason})", file=file,
                        line=line, hint="save the file as UTF-8 (a Latin-1 or Windows-1252 'é' is one byte that "
                                        "UTF-8 does not accept)") from None


#: characters YAML does not allow in a stream (PyYAML's reader refuses them with a traceback-only error)
_NON_PRINTABLE = re.compile("[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010FFFF]")


def _check_characters(text: str, file: str) -> None:
    m = _NON_PRINTABLE.search(text)
    if m is None:
        return
    pos, ch = m.start(), m.group()
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    name = {"\x00": "a NUL byte", "\x07": "a BEL character", "\x1b": "an ESC character"}.get(ch, "a control character")
    hint = "remove it" + (" (a NUL byte often means the file is UTF-16 or binary, not UTF-8 text)"
                          if ch == "\x00" else "; write control characters in a quoted string as escapes (\"\\t\")")
    raise SpecError(f"{name} (U+{ord(ch):04X}) at column {column}: YAML does not allow it", file=file, line=line,
                    hint=hint)


class _LimitedLoader(CountingYamlLoader):
    """The prediction file's composer: :class:`pytest_roofline.bounded.CountingYamlLoader` with the file's own
    limits (``max_yaml_nodes`` can be raised, :func:`how_to_raise` says how) and errors as :class:`SpecError`
    with the file's line."""

    def __init__(self, stream: str, limits: Limits, file: str):
        super().__init__(stream, max_nodes=limits.max_yaml_nodes, max_depth=MAX_DEPTH)
        self.limits, self.file = limits, file

    def _error(self, mark: Any, message: str, hint: str) -> SpecError:
        return SpecError(message, file=self.file, line=mark.line + 1 if mark is not None else None, hint=hint)

    def depth_error(self, mark: Any) -> SpecError:
        return self._error(mark, f"mappings and lists nest more than {MAX_DEPTH} levels deep here",
                           "a prediction file nests a few levels; flatten this value")

    def recursive_alias_error(self, mark: Any, anchor: str) -> SpecError:
        return self._error(mark, f"the alias *{anchor} is inside its own anchor &{anchor} (a recursive alias has "
                           "no end)", "copy the values instead of referring to the mapping or list that holds them")

    def nodes_error(self, mark: Any, size: int) -> SpecError:
        return self._error(mark, f"this value holds more than max_yaml_nodes ({self.limits.max_yaml_nodes:,}) YAML "
                           f"nodes once its aliases are expanded ({size:,}; an alias bomb?)",
                           how_to_raise("max_yaml_nodes"))


def _syntax_error(exc: yaml.MarkedYAMLError, file: str) -> SpecError:
    """PyYAML's error as one SpecError. An unclosed ``{`` or ``[`` is found where the parser gives up, often the
    next line: the error then names the line the bracket opened on (PyYAML's context mark), where the fix goes."""
    mark = exc.problem_mark or exc.context_mark
    context, opened = str(exc.context or ""), exc.context_mark
    flow = next((kind for kind in ("mapping", "sequence") if f"flow {kind}" in context), None)
    if flow and opened is not None and mark is not None and opened.line < mark.line:
        bracket, close = ("{", "}") if flow == "mapping" else ("[", "]")
        return SpecError(f"YAML does not parse: the {bracket} opened here (column {opened.column + 1}) is not closed "
                         f"before line {mark.line + 1}: {exc.problem or exc}", file=file, line=opened.line + 1,
                         hint=f"close it with {close} after its last entry (entries are separated by commas)")
    hint = "check indentation and quoting; quote values containing ': ' or '#'"
    if "chomping or indentation indicators" in str(exc.problem or ""):  # a plain value that starts with > or |
        hint = ("a value starting with > or | is a YAML block scalar: quote it, e.g. tolerance: \">= 600 tok/s\"")
    return SpecError(f"YAML does not parse: {exc.problem or exc}", file=file, line=mark.line + 1 if mark else None,
                     hint=hint)


def compose(text: str, file: str, limits: Limits) -> yaml.Node | None:
    _check_characters(text, file)
    loader = _LimitedLoader(text, limits, file)
    try:
        return loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(exc, file) from None
    except yaml.YAMLError as exc:  # a reader error the character check did not foresee
        raise SpecError(f"YAML does not parse: {exc}", file=file, hint="save the file as plain UTF-8 text") from None
    except RecursionError:
        raise SpecError("the YAML nests too deeply to be read", file=file,
                        hint="a prediction file nests a few levels; flatten it") from None
    finally:
        loader.dispose()
