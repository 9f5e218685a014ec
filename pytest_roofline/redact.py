"""The one redaction step: every text the plugin stores or prints that came from a server, from the engine's
arguments or from its environment goes through here first, so no secret given to a run is ever written down.

Two ways a secret is found, both applied by :func:`redact_text`:

- **by value**: the exact strings this process knows are secret (:func:`remember`): the endpoint's API key
  (``--endpoint-key-env`` / ``OPENAI_API_KEY``), and every ``engine.args`` / ``engine.env`` value whose name
  looks secret. Every occurrence is replaced, whatever surrounds it (a server that echoes the key back into
  ``/metrics``, an SSE event or an error body).
- **by pattern**: ``Authorization: ...`` headers, ``Bearer ...`` / ``Basic ...`` credentials, ``name: value`` /
  ``name=value`` / ``--name value`` pairs whose name looks secret (:func:`is_secret_name`), and ``user:pass@``
  in URLs, for secrets this process was never told about.

Structured data is redacted by :func:`redact_data` (values under secret-looking keys, secret flags' values in
argument lists, every string by :func:`redact_text`); :func:`redact_mapping` and :func:`redact_argv` are its
two common cases. Everything is replaced by :data:`REDACTED`.

This module imports nothing from the package (layer 1, beside ``errors`` and ``units``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["REDACTED", "MIN_SECRET_LEN", "is_secret_name", "remember", "known_secrets", "forget_all",
           "redact_text", "redact_known", "redact_url", "redact_data", "redact_mapping", "redact_argv",
           "remember_url_secrets", "printable"]

#: what a secret is replaced by
REDACTED = "***"
#: shorter values are not replaced by value (a one-letter "key" would rewrite every word); patterns still apply
MIN_SECRET_LEN = 4

# A name is secret when its last word (split at "_", "-", "." and case changes: "HF_TOKEN", "hf-token", "api_key",
# "OPENAI_API_KEY", "X-Api-Key", "db.password", "apiKey") is one of these, or any word is one of _SECRET_ANYWHERE.
# In an LLM tool "token" is mostly a unit, so first_token, max_token, prompt_token are not secrets, nor is a name
# that ends in a word saying it holds a name, a path or a count (api_key_env, token_id_range, ssl_keyfile).
_SECRET_LAST = frozenset({"token", "key", "apikey", "secret", "password", "passwd", "pwd", "passphrase",
                          "credential", "credentials", "auth", "authorization", "bearer", "cookie"})
_SECRET_ANYWHERE = frozenset({"password", "passwd", "passphrase", "secret", "credential", "credentials", "apikey",
                              "authorization"})
_NOT_SECRET_LAST = frozenset({"env", "var", "name", "names", "file", "path", "dir", "len", "length", "count", "id",
                              "ids", "type", "kind", "range", "s", "ms", "source", "url", "keyfile"})
_UNIT_TOKEN = frozenset({"first", "last", "next", "output", "input", "prompt", "per", "max", "min", "num",
                         "special", "bos", "eos", "pad", "unk", "start", "end", "stop", "generation", "completion"})
_NOT_SECRET_KEY = frozenset({"config", "cache", "sort", "point", "dict", "prefix", "primary", "lookup", "group"})
#: single words that are secret names on their own in free text ("password: x"); bare "token"/"key" are not
_BARE_SECRET = frozenset({"password", "passwd", "passphrase", "secret", "apikey", "credentials", "credential"})
#: a word that ends in one of these is a password's name run together with its owner's: PGPASSWORD, MYSQLPASSWD,
#: sslpassword (libpq), DBPASSPHRASE
_PASSWORD_ENDINGS = ("password", "passwd", "passphrase")
#: a cheap first test: every secret name contains one of these
_HINTS = ("key", "token", "secret", "pass", "pwd", "cred", "auth", "bearer", "cookie")
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

_lock = threading.Lock()
_known: set[str] = set()
_known_re: re.Pattern[str] | None = None


def is_secret_name(name: object) -> bool:
    """True when ``name`` (an argument, variable, header or field name) looks like it holds a secret:
    ``api_key``, ``--api-key``, ``HF_TOKEN``, ``OPENAI_API_KEY``, ``db_password``, ``Authorization``; not
    ``max_num_batched_tokens``, ``first_token_s``, ``api_key_env`` or ``token_id_range``."""
    if not isinstance(name, str) or len(name) > 200:
        return False
    low = name.lower()
    if not any(h in low for h in _HINTS):
        return False
    words = [w.lower() for w in _WORD_SPLIT.split(name.lstrip("-")) if w]
    if not words or words[-1] in _NOT_SECRET_LAST:
        return False
    if set(words) & _SECRET_ANYWHERE or words[-1].endswith(_PASSWORD_ENDINGS):
        return True
    last, before = words[-1], (words[-2] if len(words) > 1 else "")
    if last == "token" and before in _UNIT_TOKEN:
        return False
    if last == "key" and before in _NOT_SECRET_KEY:
        return False
    return last in _SECRET_LAST


def _secret_pair_name(name: str) -> bool:
    """:func:`is_secret_name` for a name found in free text: a bare "token" or "key" ("per token: 512 B") is not
    enough there."""
    if not is_secret_name(name):
        return False
    words = [w for w in _WORD_SPLIT.split(name.lstrip("-")) if w]
    return (len(words) > 1 or words[0].lower() in _BARE_SECRET or words[0].lower().endswith(_PASSWORD_ENDINGS)
            or name.lower() in ("authorization",))


def remember(*values: object) -> None:
    """Add secret values this process knows; from now on :func:`redact_text` replaces each occurrence."""
    global _known_re
    new = {v for v in values if isinstance(v, str) and len(v.strip()) >= MIN_SECRET_LEN}
    if not new:
        return
    with _lock:
        if new <= _known:
            return
        _known.update(new)
        # longest first, so a secret that contains another is replaced whole
        _known_re = re.compile("|".join(re.escape(v) for v in sorted(_known, key=len, reverse=True)))


def known_secrets() -> frozenset[str]:
    """The values :func:`remember` was given (for tests; never print them)."""
    with _lock:
        return frozenset(_known)


def forget_all() -> None:
    """Drop every remembered value (tests only)."""
    global _known_re
    with _lock:
        _known.clear()
        _known_re = None


# ``Authorization: Bearer x`` / ``"authorization": "x"`` / ``Proxy-Authorization=x``: the whole value, scheme kept
_AUTH_HEADER = re.compile(
    r"""(?i)\b((?:proxy-)?authorization|x-api-key|api-key)(["']?\s*[:=]\s*["']?)"""
    r"""((?:bearer|basic|token|digest)\s+)?([^\s"',;&<>{}]+)""")
# a credential after its scheme anywhere in text: ``Bearer sk-...``
_SCHEME = re.compile(r"\b((?i:bearer)|Basic)(\s+)([A-Za-z0-9._~+/=:-]{4,})")
# ``name: value`` / ``name=value`` / ``"name": "value"`` / ``'name': ['value']`` (JSON, Python reprs, env dumps,
# query strings); the callback keeps the pair unless the name looks secret
_PAIR = re.compile(r"""(?<![\w.-])(?P<name>[A-Za-z_][\w.-]{0,80})"""
                   r"""(?P<sep>["']?\s{0,5}[:=]\s{0,5}(?:\[\s{0,5})?(?P<q>["']?))"""
                   r"""(?P<value>[^\s"',;&<>{}\[\]()]+)""")
# ``--api-key VALUE`` in a command line written as text
_FLAG = re.compile(r"(?<![\w-])(?P<name>--?[A-Za-z][\w-]{0,80})(?P<sep>\s+)(?P<value>[^\s\"'-][^\s\"']*)")
# ``scheme://user:pass@host`` / ``scheme://token@host``
_URL_CREDS = re.compile(r"(?i)(?<![a-z0-9+.-])([a-z][a-z0-9+.-]{0,20}://)([^/\s@\"'<>]+)@")
# ``?password=x`` / ``&sslpassword=x`` in a URL's query (libpq's form), which the pair pattern misses when the
# URL before it reads as one ``scheme: value`` pair
_QUERY_SECRET = re.compile(r"(?i)([?&;](?:password|passwd|pwd|sslpassword|secret|api_?key|token)=)([^&\s\"'<>]+)")
# ``scheme://user:pa/ss?w@rd@host``: a password holding ``/``, ``?``, ``#`` or ``@`` (SQLAlchemy URLs allow them
# unencoded); up to the last ``@`` of the token that is followed by a host without another ``@``
_URL_CREDS_WIDE = re.compile(r"(?i)(?<![a-z0-9+.-])([a-z][a-z0-9+.-]{0,20}://)([^\s/@\"'<>:]+:[^\s\"'<>]*)@"
                             r"(?=[^\s@/\"'<>]*(?:[/\s\"'<>]|$))")


_SCHEMES = frozenset({"bearer", "basic", "digest", "token"})
#: a ``name: value`` pair's unquoted value that is no value at all in JSON, a Python repr or YAML (1.1 and 1.2
#: alike): null, None or a boolean. ``{'password': None}`` says no password was given, which masking would hide
#: (``***`` reads as "one was given"); a quoted ``'None'``, a ``name=None`` (an environment's or a query's value is
#: a string) and an ambiguous word (``no``, ``off``: a string in YAML 1.2) are masked
_NOT_A_VALUE = frozenset({"None", "null", "Null", "NULL", "~", "true", "True", "TRUE", "false", "False", "FALSE"})


def _assigned(m: re.Match[str]) -> bool:
    """The pair is an assignment to the name itself: ``passwd=x``, ``password: x``, ``PGPASSWORD=x``, ``"password":
    "x"``, ``'passwd': 'x'``; not a path that ends in a secret-looking word followed by a colon
    (``'../../etc/passwd': no run with that id``: the quote opened before the path, not before the name; an
    unquoted ``/etc/passwd: no such file`` is a path component too)."""
    before = m.string[m.start() - 1] if m.start() else ""
    if before in ("/", "\\"):  # the last component of a path
        return False
    quote = m.group("sep")[:1]
    return quote not in ("'", '"') or before == quote  # a quoted name: the quote opens right before it


def _no_value(m: re.Match[str]) -> bool:
    """The pair's value is null or a boolean (:data:`_NOT_A_VALUE`), written unquoted after a colon."""
    sep = m.group("sep")
    return ":" in sep and "=" not in sep and not m.groupdict().get("q") and m.group("value") in _NOT_A_VALUE


def _pair(m: re.Match[str]) -> str:
    name = m.group("name")
    if not _secret_pair_name(name) or m.group("value") == REDACTED or m.group("value").lower() in _SCHEMES:
        return m.group(0)
    if _no_value(m):
        return m.group(0)
    if not _assigned(m):
        return m.group(0)
    return f"{name}{m.group('sep')}{REDACTED}"


def redact_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every known secret (remembered ones and ``secrets``) and every secret-looking pattern
    replaced by :data:`REDACTED`. Linear in the length of ``text``."""
    if not isinstance(text, str) or not text:
        return text
    extra = [s for s in secrets if isinstance(s, str) and len(s.strip()) >= MIN_SECRET_LEN]
    for s in sorted(extra, key=len, reverse=True):
        text = text.replace(s, REDACTED)
    known = _known_re
    if known is not None:
        text = known.sub(REDACTED, text)
    if "@" in text:
        text = _URL_CREDS_WIDE.sub(lambda m: m.group(1) + REDACTED + "@", text)
        text = _URL_CREDS.sub(lambda m: m.group(1) + REDACTED + "@", text)
    low = text.lower()
    if "Basic" not in text and not any(h in low for h in _HINTS):  # no pattern below can match (most text)
        return text
    if "auth" in low or "api-key" in low:
        text = _AUTH_HEADER.sub(lambda m: m.group(1) + m.group(2) + (m.group(3) or "") + REDACTED, text)
    if "bearer" in low or "Basic" in text:
        text = _SCHEME.sub(lambda m: m.group(1) + m.group(2) + REDACTED
                           if m.group(3) != REDACTED else m.group(0), text)
    if "=" in text:
        text = _QUERY_SECRET.sub(lambda m: m.group(1) + REDACTED, text)
    text = _PAIR.sub(_pair, text)
    text = _FLAG.sub(_pair, text)
    return text


def redact_known(text: str) -> str:
    """``text`` with only the remembered secret values replaced (no patterns): for a finished page or document,
    whose markup a pattern could mistake for a ``name=value`` pair."""
    known = _known_re
    return known.sub(REDACTED, text) if known is not None and isinstance(text, str) else text


def remember_url_secrets(url: str) -> None:
    """Remember the password of a database URL as a secret, whatever it holds (``/``, a space, ``?``, ``@``):
    the user-info up to the last ``@`` before the path, and libpq's ``?password=`` query value, in the form
    written and percent-decoded. Called on ``--roofline-history`` and ``--store`` values before anything can
    print them; no URL pattern can find a password with a space in it."""
    from urllib.parse import parse_qsl, unquote

    text = str(url or "")
    if "://" not in text:
        return
    rest = text.split("://", 1)[1]
    head, _sep, query = rest.partition("?")
    at = head.rfind("@")
    if at < 0 and "@" in rest:  # a password holding "?": the user-info runs past the first "?"
        at = rest.rfind("@")
        head, query = rest, rest[at:].partition("?")[2]
    values = []
    if at >= 0:
        userinfo = head[:at] if at < len(head) else rest[:at]
        user, colon, password = userinfo.partition(":")
        values += [password, unquote(password)] if colon else []
    for name, value in parse_qsl(query, keep_blank_values=False):
        if is_secret_name(name) or name.lower() in ("password", "passwd"):
            values += [value, unquote(value)]
    remember(*values)


#: C0 and C1 control characters, DEL and the bidirectional overrides: never written raw to a terminal
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` safe for a terminal: every control character (ESC's colour, clear-screen and window-title
    sequences, NUL, a bidi override) written as its ``\\xNN`` / ``\\uNNNN`` escape; tabs and newlines kept."""
    if not isinstance(text, str) or not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def redact_url(url: str) -> str:
    """``url`` with any ``user:password@`` replaced by ``***@`` (and any other secret in it redacted)."""
    return redact_text(url)


def redact_argv(argv: Sequence[object], secrets: Iterable[str | None] = ()) -> list[Any]:
    """A command line with the value of every secret-looking flag replaced: ``--api-key X`` and
    ``--api-key=X`` become ``--api-key ***`` and ``--api-key=***``; every element is also :func:`redact_text`-ed."""
    secrets = list(secrets)
    out: list[Any] = []
    hide_next = False
    for a in argv:
        if not isinstance(a, str):
            out.append(redact_data(a, secrets))
            hide_next = False
            continue
        if hide_next and not a.startswith("--"):
            out.append(REDACTED)
            hide_next = False
            continue
        hide_next = False
        if a.startswith("-") and len(a) > 1:
            name, eq, _value = a.partition("=")
            if is_secret_name(name):
                if eq:
                    out.append(f"{name}={REDACTED}")
                    continue
                hide_next = True
        out.append(redact_text(a, secrets))
    return out


def redact_mapping(m: Mapping[Any, Any], secrets: Iterable[str | None] = ()) -> dict[Any, Any]:
    """``m`` with the values of secret-looking keys replaced and everything else :func:`redact_data`-ed."""
    secrets = list(secrets)
    return {k: (REDACTED if is_secret_name(k) and v not in (None, "", False) else redact_data(v, secrets))
            for k, v in m.items()}


def redact_data(obj: Any, secrets: Iterable[str | None] = (), *, _depth: int = 0) -> Any:
    """A copy of JSON-like data (dicts, lists, tuples, strings, numbers) with every secret redacted: values
    under secret-looking keys, values after secret-looking flags in lists, and secrets inside any string.
    Other objects are returned as they are."""
    secrets = secrets if isinstance(secrets, list) else list(secrets)
    if _depth > 200:  # deeper than any results file; never recurse without bound
        return obj
    if isinstance(obj, str):
        return redact_text(obj, secrets)
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            key = redact_text(k, secrets) if isinstance(k, str) else k
            if is_secret_name(k) and isinstance(v, str) and v:
                out[key] = REDACTED
            else:
                out[key] = redact_data(v, secrets, _depth=_depth + 1)
        return out
    if isinstance(obj, list):
        if any(isinstance(a, str) and a.startswith("-") for a in obj):
            return redact_argv(obj, secrets)
        return [redact_data(v, secrets, _depth=_depth + 1) for v in obj]
    if isinstance(obj, tuple):
        return tuple(redact_data(v, secrets, _depth=_depth + 1) for v in obj)
    return obj
