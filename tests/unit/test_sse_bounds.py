"""An SSE event's size is bounded and its decoding linear (issue 23, case 9.69: one 100 MB ``data:`` line hung
pytest for 150 s, the decoder re-copying and re-searching the growing event on every 64 KB read)."""

from __future__ import annotations

import json

from pytest_roofline.measure.loadgen._sse import MAX_EVENT_BYTES, decode_completion_stream


def _pieces(body: bytes, size: int = 65536) -> list:
    out: list = []
    for k, i in enumerate(range(0, len(body), size)):
        out += [k * 1000, body[i : i + size]]
    return out


def _event(text: str) -> bytes:
    return b"data: " + json.dumps({"choices": [{"text": text}]}, separators=(",", ":")).encode() + b"\n\n"


def test_an_event_over_the_bound_is_the_requests_parse_error():
    body = _event("x" * (MAX_EVENT_BYTES + 4096)) + b"data: [DONE]\n\n"
    s = decode_completion_stream(_pieces(body))
    assert s.parse_error == "an SSE event longer than 16 MiB (not read further)"
    assert s.chunk_times_s == [] and not s.done


def test_a_long_event_under_the_bound_is_read_whole_with_the_time_of_the_read_that_ended_it():
    body = _event("y" * 3_000_000) + _event("z") + b"data: [DONE]\n\n"
    pieces = _pieces(body)
    s = decode_completion_stream(pieces)
    # the first event ends in the read holding byte 3,000,000 + its framing: read index len(first event) // 65536
    first_end = (len(_event("y" * 3_000_000)) - 1) // 65536
    assert s.parse_error is None and s.done
    assert s.chunk_times_s[0] == first_end * 1000 * 1e-9


def test_an_event_end_split_across_two_reads_is_found():
    body = _event("a") + _event("b") + b"data: [DONE]\n\n"
    cut = len(_event("a")) - 1  # the blank line's two newlines in two reads
    s = decode_completion_stream([0, body[:5], 1, body[5:cut], 2, body[cut:]])
    assert len(s.chunk_times_s) == 2 and s.done and s.parse_error is None
