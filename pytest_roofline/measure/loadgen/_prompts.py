"""Prompts, request bodies and the open-loop arrival schedule: pure functions of a :class:`LoadSpec`.

Prompts are token-id lists, deterministic in (seed, point_id, index); the arrival schedule is a seeded gamma
process.  Nothing here touches a socket or a clock.

Per-request lengths, datasets and a shared prefix come from the one workload description the serving model
also reads (``model.workload``): request ``index`` is position ``index`` of the warm-up phase when
``index < warmup_requests``, else position ``index - warmup_requests`` of the measured phase, and its lengths are
``spec.lengths(...)`` at that position (``model.workload.request_lengths``, the simulator's own draw).  A
variable-length prompt is its shared prefix (``model.workload.prefix_lens`` tokens of one seeded sequence,
token ``j`` a SplitMix64 hash of (prefix key, j)) followed by a tail hashed from (key, index, j), or a dataset
entry's token ids.

The chat API takes text, not token ids, and the load generator has no tokenizer: a chat prompt is the same
token-id list written as words, token id ``i`` becoming ``CHAT_WORDS[(i - low) % len(CHAT_WORDS)]``, one
space-separated word per id.  The words are short, common English words (most are one token with their leading
space in byte-level BPE vocabularies), but the token count is the server's: the chat template adds its own
tokens, and ``usage.prompt_tokens`` in the response is what the request really cost.

A dataset sent through the chat API is sent as its text, as ``vllm bench serve --backend openai-chat`` sends
it (``async_request_openai_chat_completions`` in vllm/benchmarks/lib/endpoint_request_func.py at v0.32.0):
entry k's prompt (ShareGPT: the first human turn, ``ShareGPTDataset`` in vllm/benchmarks/datasets/datasets.py at
v0.32.0; JSONL: the prompt field) is the one user message and ``max_completion_tokens`` the request's output
length. vLLM's client wraps the text in one ``{"type": "text"}`` content part; the server turns a string content
into that one part first and then joins a message's text parts with newlines for a template that takes string
content (``_parse_chat_message_content`` and ``_parse_chat_message_content_parts`` in vllm/renderers/chat_utils.py
at v0.32.0), so both bodies give the server the same conversation; the plain string is sent here. The prompt
is then a ``str`` (:data:`Prompt`), which :class:`BodyTemplate` writes JSON-escaped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_roofline.measure.loadgen._records import LoadSpec
from pytest_roofline.model import workload as _workload

__all__ = ["PromptMaker", "BodyTemplate", "build_prompt", "request_body", "arrival_offsets", "CHAT_WORDS",
           "chat_text", "Prompt"]

#: a request's prompt: token ids, or (a dataset entry sent through the chat API) the text of its user message
Prompt = list[int] | str

#: The words a chat prompt is written in (one per prompt token id; see the module docstring).
CHAT_WORDS = tuple("""the of and to in is that it for was on are as with his they at be this from have or one had
by word but not what all were we when your can said there use an each which she do how their if will up other
about out many then them these so some her would make like him into time has look two more write go see number
no way could people my than first water been call who oil its now find long down day did get come made may
part""".split())

# spawn keys of the seeded streams (one per use, so that they never overlap); the model layer owns them, since
# the serving model draws the same arrival schedule (model/workload.py)
_KIND_PROMPT, _KIND_PREFIX, _KIND_PERMUTATION = (_workload.STREAM_PROMPT, _workload.STREAM_PREFIX,
                                                 _workload.STREAM_PERMUTATION)

# SplitMix64's golden-ratio increment and its finaliser's multipliers and shifts, as in Vigna's reference
# implementation (https://prng.di.unimi.it/splitmix64.c; Stafford's "Mix13" variant of the mixer).
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def _rng(spec: LoadSpec, *spawn_key: int) -> np.random.Generator:
    return _workload.seeded_rng(spec.seed, spec.point_id, *spawn_key)


def _mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on a uint64 array (wrapping arithmetic)."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


class PromptMaker:
    """Builds prompt token ids as a pure function of (seed, point_id, index), vectorised over indices.

    Token ``j`` of request ``i`` is ``low + h(key, i, j) mod V`` with ``h`` a SplitMix64 hash and ``key``
    derived from (seed, point_id); so prompts are independent uniform draws, cheap to build in batches.
    """

    def __init__(self, spec: LoadSpec) -> None:
        self.spec = spec
        self._lens: dict[tuple[bool, int], Any] = {}  # (warm-up?, block) -> that block's RequestLengths
        low, high = spec.token_id_range
        self.low, self.vocab = int(low), int(high) - int(low)
        self.key = np.array([_rng(spec, _KIND_PROMPT).integers(0, 2**63, dtype=np.int64)], dtype=np.uint64)
        self.prefix = (
            [int(x) for x in _rng(spec, _KIND_PREFIX).integers(low, high, size=spec.shared_prefix_len)]
            if spec.shared_prefix_len
            else []
        )
        self.free = max(spec.input_len - spec.shared_prefix_len, 0)
        self._cols = (np.arange(1, self.free + 1, dtype=np.uint64) * _GOLDEN)[None, :]
        # Small id spaces: take the digits (base V) of a seeded affine permutation of [0, V**free), so that
        # prompts are guaranteed distinct.  Large spaces: independent uniform draws (collisions need luck
        # better than 1 in 2**62).
        self.space: int | None = None
        if not spec.variable and self.free * math.log2(max(self.vocab, 2)) < 62:
            self.space = self.vocab**self.free
            rng = _rng(spec, _KIND_PERMUTATION)
            self.perm_a = int(rng.integers(0, self.space))
            b = 1
            for _ in range(1000):
                b = int(rng.integers(1, self.space)) if self.space > 1 else 1
                if math.gcd(b, self.space) == 1:
                    break
            else:
                b = 1
            self.perm_b = b

    # -- per-request lengths (the workload description's draw) -------------------------------------------
    def _phase(self, index: int) -> tuple[bool, int]:
        w = self.spec.warmup_requests
        return (True, index) if index < w else (False, index - w)

    def _drawn(self, index: int) -> tuple[int, int, int]:
        warm, pos = self._phase(index)
        key = (warm, pos // 1024)
        lens = self._lens.get(key)
        if lens is None:
            lens = self._lens[key] = self.spec.lengths(1024, warmup=warm, start=key[1] * 1024)
        k = pos % 1024
        return lens.input_lens[k], lens.output_lens[k], (lens.entries[k] if lens.entries else -1)

    def lengths(self, index: int) -> tuple[int, int]:
        """(input tokens, max_tokens) of request ``index``."""
        if not self.spec.variable:
            return self.spec.input_len, self.spec.output_len
        n_in, n_out, _ = self._drawn(index)
        return n_in, n_out

    def _variable(self, indices: Sequence[int]) -> list[Prompt]:
        spec = self.spec
        out: list[Prompt] = []
        for index in indices:
            n_in, _, entry = self._drawn(index)
            if entry >= 0:  # a dataset entry: its token ids, or through the chat API its text
                out.append(spec.dataset_texts[entry] if spec.dataset_texts else list(spec.dataset_prompts[entry]))
                continue
            p = _workload.prefix_lens([n_in], prefix_share=spec.prefix_share,
                                      shared_prefix_len=spec.shared_prefix_len)[0]
            row = self.key ^ _mix64(np.array([index], dtype=np.uint64) * _GOLDEN + _GOLDEN)
            out.append(self.prefix_tokens(p) + self._hashed(row, n_in - p))
        return out

    def _hashed(self, row_key: Any, n: int) -> list[int]:
        if n <= 0:
            return []
        z = _mix64(np.asarray(row_key, dtype=np.uint64).reshape(1) + np.arange(1, n + 1, dtype=np.uint64) * _GOLDEN)
        return (z % np.uint64(self.vocab)).astype(np.int64).__add__(self.low).tolist()

    def prefix_tokens(self, n: int) -> list[int]:
        """The first ``n`` tokens of the point's shared prefix (variable-length path): one sequence for all."""
        pkey = _mix64(self.key ^ np.uint64(0x5EED_0F_0000_0001))
        return self._hashed(pkey, n)

    def tails(self, indices: Sequence[int]) -> list[list[int]]:
        """The non-shared part of the prompts of ``indices``."""
        spec = self.spec
        if self.space is None:
            idx = np.asarray(indices, dtype=np.uint64)
            rows = _mix64(self.key ^ _mix64(idx * _GOLDEN + _GOLDEN))[:, None]
            z = _mix64(rows + self._cols)
            return (z % np.uint64(self.vocab)).astype(np.int64).__add__(self.low).tolist()
        out = []
        for index in indices:
            if index >= self.space and self.free:
                raise ValueError(
                    f"only {self.space} distinct prompts exist for input_len={spec.input_len}, "
                    f"shared_prefix_len={spec.shared_prefix_len} and {self.vocab} token ids"
                )
            x = (self.perm_a + index * self.perm_b) % self.space
            tail = []
            for _ in range(self.free):
                x, d = divmod(x, self.vocab)
                tail.append(self.low + d)
            out.append(tail)
        return out

    def many(self, indices: Sequence[int]) -> list[Prompt]:
        """The prompts of ``indices``."""
        if self.spec.variable:
            return self._variable(indices)
        return [self.prefix + t for t in self.tails(indices)]

    def __call__(self, index: int) -> Prompt:
        return self.many([index])[0]


def build_prompt(spec: LoadSpec, index: int) -> Prompt:
    """The prompt (token ids, exactly ``spec.input_len`` of them, or the request's drawn length) of request
    ``index`` of the point.

    Deterministic in (seed, point_id, index); distinct for every index of a point, and (with overwhelming
    probability) across points.  The first ``shared_prefix_len`` tokens are the same for all requests.  A
    dataset entry sent through the chat API is its text (module docstring).
    """
    return PromptMaker(spec)(index)


def chat_text(spec: LoadSpec, prompt: Prompt | Sequence[int]) -> str:
    """The user message that carries ``prompt`` in a chat request: a dataset entry's text as it is, token ids as
    words."""
    if isinstance(prompt, str):
        return prompt
    low, n = int(spec.token_id_range[0]), len(CHAT_WORDS)
    return " ".join(CHAT_WORDS[(int(i) - low) % n] for i in prompt)


def request_body(spec: LoadSpec, prompt: Prompt | Sequence[int], output_len: int | None = None) -> dict[str, Any]:
    """The JSON body sent for one request (before serialisation); ``output_len``: its max tokens (default the
    spec's; a per-request length is ``PromptMaker.lengths(index)[1]``)."""
    n_out = spec.output_len if output_len is None else int(output_len)
    if spec.api == "chat":
        # vLLM's ChatCompletionRequest: messages, max_completion_tokens (max_tokens is its deprecated alias),
        # ignore_eos, stream_options (vllm/entrypoints/openai/chat_completion/protocol.py at v0.32.0)
        chat: dict[str, Any] = {
            "model": spec.model,
            "messages": [{"role": "user", "content": chat_text(spec, prompt)}],
            "max_completion_tokens": n_out,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        chat.update(spec.extra_body)
        return chat
    if isinstance(prompt, str):
        raise ValueError("a text prompt is sent through the chat API only (api='chat')")
    body: dict[str, Any] = {
        "model": spec.model,
        "prompt": list(prompt),
        "max_tokens": n_out,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    body.update(spec.extra_body)
    return body


class BodyTemplate:
    """Serialises :func:`request_body` fast: the bytes of ``json.dumps(request_body(spec, prompt, output_len),
    separators=(",", ":"))``, assembled from the text around the prompt and a table of token-id digits (a text
    prompt: its JSON string escape, as ``json.dumps`` writes it)."""

    def __init__(self, spec: LoadSpec) -> None:
        marker = "\x00prompt\x00"
        self.chat = spec.api == "chat"
        self.output_len = spec.output_len
        if self.chat:
            # the user message is a string: pre + words + post (the words need no JSON escaping)
            base = request_body(spec, [])
            base["messages"] = [{"role": "user", "content": marker}]
            tmpl = json.dumps(base, separators=(",", ":"))
            pre, sep, post = tmpl.partition(json.dumps(marker)[1:-1])
            assert sep and marker not in post
            self.pre, self.post = pre.encode(), post.encode()
            low, n = int(spec.token_id_range[0]), len(CHAT_WORDS)
            self.low, self.words = low, [CHAT_WORDS[k % n].encode("ascii") for k in range(n)]
            self.digits = None
            return
        tmpl = json.dumps({**request_body(spec, []), "prompt": marker}, separators=(",", ":"))
        pre, sep, post = tmpl.partition(json.dumps(marker))
        assert sep and json.dumps(marker) not in post
        self.pre = (pre + "[").encode()
        self.post = ("]" + post).encode()
        high = int(spec.token_id_range[1])
        self.digits = [str(i).encode("ascii") for i in range(high)] if high <= 1 << 21 else None

    def body(self, prompt: Prompt | Sequence[int], output_len: int | None = None) -> bytes:
        """The serialised body carrying ``prompt`` (and ``output_len`` as its max tokens, default the spec's)."""
        post = self.post
        if output_len is not None and output_len != self.output_len:
            # the max tokens come after the prompt: replaced in the text after it, never inside a prompt's text
            key = b'"max_completion_tokens":' if self.chat else b'"max_tokens":'
            post = post.replace(key + str(self.output_len).encode(), key + str(int(output_len)).encode(), 1)
        if isinstance(prompt, str):
            if not self.chat:
                raise ValueError("a text prompt is sent through the chat API only (api='chat')")
            return b"".join((self.pre, json.dumps(prompt)[1:-1].encode("ascii"), post))
        if self.chat:
            words, low, n = self.words, self.low, len(self.words)
            return b"".join((self.pre, b" ".join([words[(int(i) - low) % n] for i in prompt]), post))
        tab = self.digits
        try:
            ids = b",".join(map(tab.__getitem__, prompt)) if tab is not None else ",".join(map(str, prompt)).encode()
        except IndexError:  # a dataset's ids (its own tokenizer's) beyond the range the table covers: written out
            ids = ",".join(map(str, prompt)).encode()
        return b"".join((self.pre, ids, post))


def arrival_offsets(spec: LoadSpec, count: int | None = None, *, warmup: bool = False) -> np.ndarray:
    """Open loop: send times of the requests, seconds after the phase start (the first is 0).

    Gaps are ``gamma(shape=burstiness, scale=1/(rate*burstiness))`` drawn from a generator seeded by
    (seed, point_id) (a separate stream for the warm-up phase): ``model.workload.arrival_offsets_s``, the
    schedule the serving model simulates, spanned as ``spec.arrival_span`` says.  With ``count`` the first ``count``
    arrivals are returned; otherwise the spec's limits apply (``num_requests`` and/or arrivals before ``duration_s``).
    """
    if spec.rate_req_s is None:
        raise ValueError("arrival_offsets needs rate_req_s")
    return _workload.arrival_offsets_s(
        rate_req_per_s=spec.rate_req_s, burstiness=spec.burstiness, seed=spec.seed, stream_id=spec.point_id,
        count=count if count is not None else spec.num_requests,
        horizon_s=None if count is not None else spec.duration_s, warmup=warmup,
        ramp_up=None if warmup else spec.ramp_up, span=spec.arrival_span)
