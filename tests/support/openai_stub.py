"""A base for the small OpenAI-compatible test servers (tests import it by name: pytest puts tests/ on sys.path).

``send`` answers with a whole body; ``start_stream``, ``chunk`` and ``end_stream`` write a chunked SSE
completions stream the way vLLM does (``data: {...}`` events, then ``data: [DONE]``); ``stream_chat`` writes a
whole chat-completions stream."""

from __future__ import annotations

import http.server
import json
from typing import Any


class StubHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a: Any) -> None:
        pass

    def _send(self, code: int, body: dict | str, ctype: str = "application/json") -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, obj: dict | bytes) -> None:
        data = b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def end_stream(self) -> None:
        self.chunk(b"[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def stream_chat(self, n_tokens: int, prompt_tokens: int) -> None:
        """A chat-completions stream as vLLM's server sends it (vllm/entrypoints/openai/chat_completion/serving.py
        at v0.32.0): a role-only first event, one ``delta.content`` event per token, a usage event with empty
        ``choices`` (``stream_options.include_usage``), then ``[DONE]``."""
        obj = {"id": "chat", "object": "chat.completion.chunk", "model": "m"}
        self.start_stream()
        self.chunk({**obj, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
        for k in range(n_tokens):
            self.chunk({**obj, "choices": [{"index": 0, "delta": {"content": f" t{k}"},
                                            "finish_reason": "length" if k == n_tokens - 1 else None}]})
        self.chunk({**obj, "choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n_tokens,
                                                    "total_tokens": prompt_tokens + n_tokens}})
        self.end_stream()
