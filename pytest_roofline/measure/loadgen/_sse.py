"""The server-sent-events decoder for a streamed ``/v1/completions`` or ``/v1/chat/completions`` response.

Input: the de-chunked body of one response as a flat list ``[t_ns, bytes, t_ns, bytes, ...]``, one pair per
socket read, ``t_ns`` being the read's time.  Output: a :class:`CompletionStream` with the arrival time of
every token-carrying event (each event gets the time of the read that completed it), the final ``usage``
object, whether ``data: [DONE]`` arrived, and the errors the stream reported.

The event grammar is the WHATWG HTML "Server-sent events" one as far as vLLM uses it
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation): events end at a
blank line, lines end in LF or CRLF, only ``data:`` fields matter, and each ``data:`` line carries one JSON
object or the ``[DONE]`` sentinel (vLLM's OpenAI server writes ``data: {json}\\n\\n`` per chunk and
``data: [DONE]\\n\\n`` last: vllm/entrypoints/openai/completion/serving.py at v0.32.0).

A chat stream's token events are the ones whose ``choices[0].delta`` carries non-empty ``content`` (or
``reasoning_content`` / ``reasoning``, a reasoning model's tokens): vLLM's first chat event carries only
``delta: {role: assistant, content: ""}``, sent as the first output arrives, and is not a token
(vllm/entrypoints/openai/chat_completion/serving.py at v0.32.0, ``first_iteration``; ``vllm bench serve``
counts the same way).

A fast path skips JSON parsing for reads that hold whole plain token events only (ASCII bytes, compact JSON,
non-empty ``choices``, no ``usage`` object, no ``error``; for chat also one non-empty ``"content":"`` per event and
no ``role``); a read with any other byte takes the full path, where bytes that are not UTF-8 (or a ``data:`` line
that is not JSON) are the request's parse error: it fails, never a token.  A quote inside a JSON string is
escaped, so the byte patterns it counts can only be JSON structure; anything else takes the full path.

The fast path counts only events it can prove are JSON without parsing them (reliability review 2026-12, case
9.70b: a compact ``data:`` line that was not JSON counted as a token): the full path records the *shape* of each
token event it parsed -- its bytes up to the token text's opening quote and from its closing quote on -- and the
fast path takes an event only when it is a known shape's prefix, a JSON string body (no raw quote or control
byte, only JSON's escapes) and that shape's suffix.  Putting one well-formed string in place of another keeps a
JSON document well-formed and its structure (``choices``, ``usage``, ``error``) the same, so such an event is the
token event its shape was.  A stream's token events share their id, model and fields, so after the first one (or
the last, whose ``finish_reason`` differs) every event of a plain stream takes the fast path; any other event,
malformed ones included, is parsed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CompletionStream", "decode_completion_stream", "MAX_EVENT_BYTES"]

#: the longest SSE event read (a vLLM token event is ~200 bytes; the review's one 100 MB ``data:`` line hung the
#: decoder, which re-copied and re-searched the whole event on every read): longer is the request's parse error
MAX_EVENT_BYTES = 16 << 20
#: the body of a JSON string (RFC 8259 section 7): no raw quote, backslash or control byte but JSON's escapes
_JSON_STRING_BODY = re.compile(rb'(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*')
#: where a token event's text starts, by API (the opening quote included)
_TEXT_KEY = {False: b'"text":"', True: b'"content":"'}
#: the most token-event shapes one stream keeps (a plain vLLM stream has two: the tokens and the last token)
_MAX_SHAPES = 8


@dataclass(slots=True)
class CompletionStream:
    """What one streamed completion said.

    Attributes:
        chunk_times_s: arrival time (seconds) of every event with a non-empty ``choices``, in order.
        usage: the last non-empty ``usage`` object (``None`` when none arrived).
        done: ``data: [DONE]`` arrived.
        stream_error: the last ``error`` object an event carried, as text (``"stream error: ..."``).
        parse_error: the first ``data:`` payload that was not JSON, as text.
        coalesced: token events that arrived in the same read as the previous token event.
    """

    chunk_times_s: list[float] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    done: bool = False
    stream_error: str | None = None
    parse_error: str | None = None
    coalesced: int = 0


def _ns_to_s(t_ns: int) -> float:
    return t_ns * 1e-9


def _chat_token(obj: dict[str, Any]) -> bool:
    """A chat event that carries output tokens (see the module docstring)."""
    first = obj["choices"][0]
    delta = first.get("delta") if isinstance(first, dict) else None
    if not isinstance(delta, dict):
        return False
    return bool(delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning"))


def _shape_of(event: bytes, key: bytes) -> tuple[bytes, bytes] | None:
    """The shape of a token event the full path parsed: its bytes up to and including the opening quote of its
    first ``key`` string, and from that string's closing quote on (None when there is no such string)."""
    i = event.find(key)
    if i < 0:
        return None
    start = i + len(key)
    m = _JSON_STRING_BODY.match(event, start)
    if m is None or event[m.end():m.end() + 1] != b'"' or m.end() == start:
        return None
    return event[:start], event[m.end():]


def _fits_a_shape(event: bytes, shapes: list[tuple[bytes, bytes]]) -> bool:
    """``event`` is a known shape with another non-empty JSON string body in place of its text: well-formed JSON
    of the same structure as the parsed event the shape came from."""
    for prefix, suffix in shapes:
        end = len(event) - len(suffix)
        if end > len(prefix) and event.startswith(prefix) and event.endswith(suffix) \
                and _JSON_STRING_BODY.fullmatch(event, len(prefix), end) is not None:
            return True
    return False


def _all_fit(events: list[bytes], n: int, shapes: list[tuple[bytes, bytes]]) -> bool:
    """A read of ``n`` token events, each of a known shape."""
    return len(events) == n and all(_fits_a_shape(ev, shapes) for ev in events)


def decode_completion_stream(pieces: Sequence[Any], to_seconds: Callable[[int], float] | None = None,
                             chat: bool = False) -> CompletionStream:
    """Decode the SSE events of one response body given as ``[t_ns, bytes, t_ns, bytes, ...]``.

    ``to_seconds`` maps a read's ``t_ns`` to seconds; ``None`` means ``t_ns * 1e-9``.  Events still
    incomplete at the end (a cut stream) are ignored.  ``chat``: a ``/v1/chat/completions`` stream.
    """
    chunk_times: list[float] = []
    add_time = chunk_times.append
    buf = bytearray()
    usage: Any = None
    done = False
    stream_error: str | None = None
    parse_error: str | None = None
    loads = json.loads
    last_read = None
    coalesced = 0
    convert = to_seconds is not None
    to_s: Callable[[int], float] = to_seconds if to_seconds is not None else _ns_to_s
    shapes: list[tuple[bytes, bytes]] = []  # token events parsed on the full path (see the module docstring)
    key = _TEXT_KEY[chat]
    for k in range(0, len(pieces), 2):
        piece = pieces[k + 1]
        if shapes and not buf and piece[-2:] == b"\n\n" and piece.isascii():  # non-ASCII: the full path checks it
            n = piece.count(b'"choices":[{')
            if n and piece.count(b"data:") == n and b'"usage":{' not in piece \
                    and b'"error"' not in piece and b"\r" not in piece \
                    and (not chat or (piece.count(b'"content":"') == n and b'"content":""' not in piece
                                      and b'"role"' not in piece)) \
                    and (_fits_a_shape(piece[:-2], shapes) if n == 1 else
                         _all_fit(piece[:-2].split(b"\n\n"), n, shapes)):
                t_ns = pieces[k]
                t_s = to_s(t_ns) if convert else t_ns * 1e-9
                coalesced += n if t_ns == last_read else n - 1
                last_read = t_ns
                if n == 1:
                    add_time(t_s)
                else:
                    chunk_times.extend([t_s] * n)
                continue
        if buf:  # grown in place and searched only where this read added bytes: linear in a long event
            seam = bytes(buf[-3:]) + piece[:3]
            buf += piece
            if len(buf) > MAX_EVENT_BYTES:
                parse_error = f"an SSE event longer than {MAX_EVENT_BYTES >> 20} MiB (not read further)"
                break
            if b"\n\n" not in piece and b"\n\r\n" not in piece and b"\n\n" not in seam and b"\n\r\n" not in seam:
                continue
        else:
            buf = bytearray(piece)
            if b"\n\n" not in buf and b"\r\n\r\n" not in buf:
                continue
        if b"\r" in buf:
            buf = buf.replace(b"\r\n", b"\n")
        events = buf.split(b"\n\n")
        buf = events.pop()
        t_read = pieces[k]
        t_ev: float | None = None
        for ev in events:
            for line in ev.split(b"\n"):
                if line[:5] != b"data:":
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    done = True
                    continue
                try:
                    obj = loads(data)
                except ValueError:
                    if parse_error is None:
                        parse_error = f"unparseable SSE data: {bytes(data[:200])!r}"
                    continue
                if not isinstance(obj, dict):
                    continue
                if obj.get("choices") and (not chat or _chat_token(obj)):
                    if len(shapes) < _MAX_SHAPES and ev == line and b'"usage":{' not in ev and b'"error"' not in ev:
                        shape = _shape_of(bytes(ev), key)
                        if shape is not None and shape not in shapes:
                            shapes.append(shape)
                    if t_ev is None:
                        t_ev = to_s(t_read) if convert else t_read * 1e-9
                    if last_read == t_read:
                        coalesced += 1
                    last_read = t_read
                    add_time(t_ev)
                u = obj.get("usage")
                if u:
                    usage = u
                e = obj.get("error")
                if e:
                    stream_error = "stream error: " + (str(e.get("message", e)) if isinstance(e, dict) else str(e))
    return CompletionStream(chunk_times_s=chunk_times, usage=usage, done=done, stream_error=stream_error,
                            parse_error=parse_error, coalesced=coalesced)
