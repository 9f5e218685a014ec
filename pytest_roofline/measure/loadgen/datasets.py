"""The workload a prediction file describes, resolved once for the load generator and the serving model.

``format.workloads`` checked the ``workload:`` section into plain data; :func:`resolve` turns it into the
objects of ``model.workload`` (length distributions, a dataset's token lengths, the prefix share, a ramp-up)
that both ``LoadSpec`` and ``serving.Workload`` take, so both draw the same per-request lengths.

A dataset's lengths are in tokens, so a dataset needs a tokenizer: ``workload.dataset.tokenizer`` (a
``tokenizer.json``), else the served model's own ``tokenizer.json`` when the model is a local folder (the
project's tiny model is), else none. The load generator sends a dataset's prompts as token ids (so the server
counts exactly the tokens the simulator simulates) and refuses a dataset without a tokenizer; the serving model
then uses a chars/4 estimate (``model.workload.estimate_tokens``), flagged ``estimated`` in the results.
Tokenized lengths are kept per (file sha256, tokenizer sha256), in this process and under
``~/.cache/pytest-roofline/datasets/``.

With ``workload.api: chat`` a dataset entry is sent as text, the way ``vllm bench serve --backend openai-chat``
sends it (``async_request_openai_chat_completions`` in vllm/benchmarks/lib/endpoint_request_func.py at v0.32.0:
the prompt as the one user message, ``max_completion_tokens`` its output length). The server then renders its
chat template around the text and tokenizes the result, so the prompt it processes is longer than the text. Each
entry's length (what the serving model is charged and ``RequestRecord.input_len`` plans) is counted the way
vLLM's server counts it (:func:`chat_prompt_tokens`): the chat template (``engine.args.chat_template``, else the
tokenizer's own) rendered by transformers' ``apply_chat_template`` with ``add_generation_prompt`` and the
rendered text tokenized without added special tokens. Those are the defaults of vLLM's ChatCompletionRequest
(``add_generation_prompt=True``, ``add_special_tokens=False``, vllm/entrypoints/openai/chat_completion/protocol.py
at v0.32.0), and its renderer calls the same ``apply_chat_template`` (``safe_apply_chat_template`` in
vllm/renderers/hf.py at v0.32.0). When no template or no tokenizer is at hand, or transformers is not
installed, the text's tokens (or the chars/4 estimate) plus ``model.workload.CHAT_TOKENS_PER_MESSAGE +
CHAT_REPLY_PRIMING_TOKENS`` are charged instead, and :class:`ChatPrompts` (the results' ``workload.chat``) says
so. The measured count is always the server's: ``usage.prompt_tokens`` per request, summarised by
:func:`realised` next to the planned lengths.
"""

from __future__ import annotations

import hashlib
import json
import os
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_roofline.errors import WorkloadError
from pytest_roofline.model import workload as wl
from pytest_roofline.units import MIB

__all__ = ["ResolvedWorkload", "ChatPrompts", "resolve", "tokenizer_path", "chat_template_text",
           "chat_prompt_tokens", "realised"]

_MEM: dict[tuple[str, str], tuple[tuple[int, ...], tuple[int | None, ...], tuple[Sequence[int], ...]]] = {}
_CHAT_MEM: dict[tuple[str, str, str], tuple[tuple[int, ...], str]] = {}


@dataclass(frozen=True)
class ChatPrompts:
    """How a chat dataset's prompt tokens were counted (the results' ``workload.chat``).

    ``method``: ``"chat template"`` (rendered and tokenized as the server does) or ``"per-message estimate"``;
    ``template``: where the template came from (``engine.args.chat_template``, ``the tokenizer's``) or why none
    was used; ``text_tokens[k]``: entry k's text alone; ``template_tokens[k]``: what the template added."""

    method: str
    template: str
    text_tokens: tuple[int, ...]
    template_tokens: tuple[int, ...]

    @property
    def estimated(self) -> bool:
        return self.method != "chat template"

    def to_dict(self) -> dict[str, Any]:
        return {"prompt_tokens": self.method, "template": self.template,
                "text_tokens": wl.length_stats(self.text_tokens),
                "template_tokens": wl.length_stats(self.template_tokens)}


@dataclass(frozen=True)
class ResolvedWorkload:
    """The shared description of a file's requests (``None`` / 0: fixed lengths, no dataset, no prefix)."""

    input_dist: wl.LengthDist | None = None
    output_dist: wl.LengthDist | None = None
    dataset: wl.DatasetLengths | None = None
    dataset_prompts: tuple[tuple[int, ...], ...] = ()
    dataset_texts: tuple[str, ...] = ()  # api: chat: each entry's user message (its prompt text)
    chat: ChatPrompts | None = None  # api: chat with a dataset: how its prompt tokens were counted
    prefix_share: float = 0.0
    shared_prefix_len: int = 0
    ramp_up: wl.RampUp | None = None

    def load_kwargs(self) -> dict[str, Any]:
        """The ``LoadSpec`` fields."""
        return {"input_dist": self.input_dist, "output_dist": self.output_dist, "dataset": self.dataset,
                "dataset_prompts": self.dataset_prompts, "dataset_texts": self.dataset_texts,
                "prefix_share": self.prefix_share, "ramp_up": self.ramp_up}

    def serving_kwargs(self) -> dict[str, Any]:
        """The ``serving.workload_for_point`` arguments."""
        kw: dict[str, Any] = {"dataset": self.dataset, "prefix_share": self.prefix_share,
                              "shared_prefix_len": self.shared_prefix_len, "ramp_up": self.ramp_up}
        if self.input_dist is not None:
            kw["input_len"] = self.input_dist
        if self.output_dist is not None:
            kw["output_len"] = self.output_dist
        return kw

    def to_dict(self) -> dict[str, Any]:
        """The workload as run, for the results file."""
        return {"input_len": self.input_dist.to_dict() if self.input_dist else None,
                "output_len": self.output_dist.to_dict() if self.output_dist else None,
                "dataset": self.dataset.to_dict() if self.dataset else None,
                "prefix_share": self.prefix_share, "shared_prefix_len": self.shared_prefix_len,
                "ramp_up": self.ramp_up.to_dict() if self.ramp_up else None,
                **({"chat": self.chat.to_dict()} if self.chat is not None else {})}


def tokenizer_path(workload: Mapping[str, Any], model_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The tokenizer.json a dataset is tokenized with: the dataset's own, else the model folder's, else None."""
    ds = workload.get("dataset") or {}
    if ds.get("tokenizer"):
        return Path(ds["tokenizer"])
    if model_dir is not None:
        p = Path(model_dir) / "tokenizer.json"
        if p.is_file():
            return p
    return None


def _sha_file(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for block in iter(lambda: fh.read(MIB), b""):
            h.update(block)
    return h.hexdigest()


def _cache_file(sha: str, tok_sha: str) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "pytest-roofline" / "datasets" / f"{sha[:16]}-{tok_sha[:16]}.json"


def _entries(ds: Mapping[str, Any]) -> tuple[list[wl.DatasetEntry], str]:
    """The dataset's entries and the file's sha256 (checked against the one the prediction file was read with);
    parsed by ``format.workloads.DatasetFile``, the one home of a dataset's parsing."""
    from pytest_roofline.format.workloads import DatasetFile

    dataset = DatasetFile.of(ds)
    entries = list(dataset.entries())
    sha = dataset.sha256 or ""
    if sha != ds.get("sha256"):
        raise WorkloadError(f"{ds['path']} changed since the prediction file was read (sha256 differs)")
    return entries, sha


def _tokenize(ds: Mapping[str, Any], tok: Path | None, need_ids: bool
              ) -> tuple[tuple[int, ...], tuple[int | None, ...], tuple[Sequence[int], ...], str, bool]:
    """Each entry's prompt and output lengths and (a tokenizer given) its prompt's token ids, in one streaming
    pass over the file: no entry's text is kept, and each prompt's ids are an ``array('I')`` of 4 bytes a token
    (a tuple of Python ints took about 36), so a live point on a dataset holds about 4 bytes per prompt token."""
    if tok is None:
        entries, _ = _entries(ds)
        if need_ids:
            raise WorkloadError(f"the dataset {ds['source']} needs a tokenizer to be sent as token ids: give "
                                "workload.dataset.tokenizer: path/to/tokenizer.json")
        ins = tuple(wl.estimate_tokens(e.prompt) for e in entries)
        outs = tuple(e.output_len if e.output_len is not None
                     else (wl.estimate_tokens(e.completion) if e.completion is not None else None) for e in entries)
        return ins, outs, (), "chars/4 estimate", True
    tok_sha = _sha_file(tok)
    key = (str(ds.get("sha256")), tok_sha)
    cache = _cache_file(key[0], tok_sha)
    if (key in _MEM or cache.is_file()) and _sha_file(Path(ds["path"])) != ds.get("sha256"):
        raise WorkloadError(f"{ds['path']} changed since the prediction file was read (sha256 differs)")
    if key in _MEM and (_MEM[key][2] or not need_ids):
        i, o, p = _MEM[key]
        return i, o, p, str(tok), False
    if not need_ids and cache.is_file():
        try:
            data = json.loads(cache.read_text())
            i, o = tuple(data["input_lens"]), tuple(data["output_lens"])
            _MEM.setdefault(key, (i, o, ()))
            return i, o, (), str(tok), False
        except (OSError, ValueError, KeyError):
            pass
    from tokenizers import Tokenizer

    from pytest_roofline.format.workloads import DatasetFile

    try:
        t = Tokenizer.from_file(str(tok))
    except Exception as exc:  # the tokenizers library raises its own Exception for a file it cannot load
        raise WorkloadError(f"the tokenizer {tok} cannot be loaded ({type(exc).__name__}: {str(exc)[:200]}); give "
                            "workload.dataset.tokenizer: a tokenizer.json the tokenizers library reads") from None
    dataset = DatasetFile.of(ds)
    ins_l: list[int] = []
    outs_l: list[int | None] = []
    prompts_l: list[array] = []
    for e in dataset.entries():
        # the token ids a prompt is sent as; no special tokens added: the server counts exactly these
        ids = t.encode(e.prompt, add_special_tokens=False).ids
        if not ids:
            raise WorkloadError(f"{ds['source']}: the prompt of line {e.line} is no token", line=e.line)
        ins_l.append(len(ids))
        if need_ids:
            prompts_l.append(array("I", ids))
        outs_l.append(e.output_len if e.output_len is not None
                      else (max(1, len(t.encode(e.completion, add_special_tokens=False).ids))
                            if e.completion is not None else None))
    if (dataset.sha256 or "") != ds.get("sha256"):
        raise WorkloadError(f"{ds['path']} changed since the prediction file was read (sha256 differs)")
    ins, outs, prompts = tuple(ins_l), tuple(outs_l), tuple(prompts_l)
    _MEM[key] = (ins, outs, prompts)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"input_lens": ins, "output_lens": outs, "source": ds["source"]}))
    except OSError:
        pass
    return ins, outs, prompts, str(tok), False


def chat_template_text(value: str | None) -> str | None:
    """``engine.args.chat_template`` read as vLLM's ``--chat-template`` reads it (``_load_chat_template`` in
    vllm/renderers/chat_utils.py at v0.32.0): the text of the file it names, else the value itself when it holds
    a Jinja character (``{``, ``}`` or a newline); ``None`` otherwise (a name of one of vLLM's built-in templates,
    which are not read here)."""
    if not value:
        return None
    try:
        with open(value, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return value if any(c in value for c in "{}\n") else None


def chat_prompt_tokens(texts: Sequence[str], tok: Path | None, chat_template: str | None = None
                       ) -> tuple[tuple[int, ...] | None, str]:
    """The prompt tokens vLLM's chat endpoint processes for each text sent as the one user message, and where
    the template came from; ``(None, why)`` when they cannot be counted here.

    The template is ``chat_template`` (``engine.args.chat_template``, as :func:`chat_template_text` reads it),
    else the tokenizer's own (its folder's ``tokenizer_config.json`` or ``chat_template.jinja``); transformers'
    ``apply_chat_template`` renders it with ``add_generation_prompt=True`` and the text is tokenized without
    added special tokens, as vLLM's ChatCompletionRequest defaults do (module docstring). The message content
    is a string, what vLLM gives a template that takes string content (most do); for a template that takes
    OpenAI-style content parts the count may differ, and the results' ``usage.prompt_tokens`` shows it."""
    if tok is None:
        return None, "no tokenizer"
    try:
        from transformers import PreTrainedTokenizerFast
    except ImportError:
        return None, "transformers is not installed (pip install transformers renders the chat template)"
    folder = tok.parent
    try:
        if tok.name == "tokenizer.json" and (folder / "tokenizer_config.json").is_file():
            hf = PreTrainedTokenizerFast.from_pretrained(str(folder))  # its special tokens and chat template too
        else:
            hf = PreTrainedTokenizerFast(tokenizer_file=str(tok))
    except Exception as exc:  # a tokenizer transformers cannot load: the estimate, saying why
        return None, f"transformers could not load {tok} ({type(exc).__name__}: {exc})"
    if chat_template:
        template = chat_template_text(chat_template)
        if template is None:
            return None, (f"engine.args.chat_template {chat_template!r} is neither a file nor a template (vLLM's "
                          "built-in template names are not read here)")
        where = "engine.args.chat_template"
    else:
        template = getattr(hf, "chat_template", None)
        if not isinstance(template, str) or not template:
            return None, "no chat template (neither engine.args.chat_template nor the tokenizer's)"
        where = "the tokenizer's"
    try:
        rendered = [hf.apply_chat_template([{"role": "user", "content": t}], chat_template=template,
                                           tokenize=False, add_generation_prompt=True) for t in texts]
        counts = tuple(len(hf(str(r), add_special_tokens=False)["input_ids"]) for r in rendered)
    except Exception as exc:  # a template that raises for this message: the estimate, saying why
        return None, f"the chat template did not render ({type(exc).__name__}: {exc})"
    return counts, where


def _chat_dataset(ds: Mapping[str, Any], tok: Path | None, chat_template: str | None
                  ) -> tuple[wl.DatasetLengths, tuple[str, ...], ChatPrompts]:
    """A dataset sent through the chat API: its lengths (the server's prompt tokens), texts and accounting."""
    entries, sha = _entries(ds)
    text_ins, outs, _, tok_name, estimated = _tokenize(ds, tok, False)
    texts = tuple(e.prompt for e in entries)
    # the counts depend on the file, the tokenizer and the template: the given one, else the tokenizer folder's
    h = hashlib.sha256((chat_template_text(chat_template) or chat_template or "").encode())
    for own in ((tok.parent / "tokenizer_config.json", tok.parent / "chat_template.jinja") if tok is not None else ()):
        h.update(own.read_bytes() if own.is_file() else b"\0")
    key = (sha, _sha_file(tok) if tok is not None else "", h.hexdigest())
    counts: tuple[int, ...] | None
    if tok is not None and key in _CHAT_MEM:  # rendering the template again would give the same counts
        counts, where = _CHAT_MEM[key]
    else:
        counts, where = chat_prompt_tokens(texts, tok, chat_template)
        if counts is not None:
            _CHAT_MEM[key] = (counts, where)
    if counts is None:  # the documented per-message overhead (model/workload.py), flagged as estimated
        over = wl.CHAT_TOKENS_PER_MESSAGE + wl.CHAT_REPLY_PRIMING_TOKENS
        chat = ChatPrompts("per-message estimate", where, text_ins, tuple(over for _ in text_ins))
        ins = tuple(n + over for n in text_ins)
    else:
        chat = ChatPrompts("chat template", where, text_ins, tuple(c - n for c, n in zip(counts, text_ins)))
        ins = counts
    lengths = wl.DatasetLengths(ins, outs, order=ds.get("order", "sequential"), source=ds["source"],
                                sha256=ds["sha256"], estimated=estimated or chat.estimated, tokenizer=tok_name)
    return lengths, texts, chat


def resolve(workload: Mapping[str, Any], *, model_dir: str | os.PathLike[str] | None = None,
            for_load: bool = False, chat_template: str | None = None) -> ResolvedWorkload:
    """The shared description of ``workload`` (a Spec's plain ``workload`` dict). ``for_load``: the load
    generator's (a dataset's prompts tokenized to ids, a tokenizer required). With ``workload.api: chat`` a
    dataset's entries are sent as text (``dataset_texts``, no tokenizer required) and their lengths are the
    prompt tokens the server processes (``chat_template``: ``engine.args.chat_template``; module docstring)."""
    kw: dict[str, Any] = {}
    for key in ("input_dist", "output_dist"):
        if workload.get(key) is not None:
            kw[key] = wl.parse_length(workload[key], f"workload.{key.replace('_dist', '_len')}")
    if workload.get("prefix_share"):
        kw["prefix_share"] = float(workload["prefix_share"])
    if workload.get("shared_prefix_len"):
        kw["shared_prefix_len"] = int(workload["shared_prefix_len"])
    if workload.get("ramp_up"):
        r = workload["ramp_up"]
        kw["ramp_up"] = wl.RampUp(r["strategy"], float(r["start_rps"]), float(r["end_rps"]))
    ds = workload.get("dataset")
    if ds and workload.get("api") == "chat":
        kw["dataset"], kw["dataset_texts"], kw["chat"] = _chat_dataset(ds, tokenizer_path(workload, model_dir),
                                                                      chat_template)
    elif ds:
        tok = tokenizer_path(workload, model_dir)
        ins, outs, prompts, tok_name, estimated = _tokenize(ds, tok, for_load)
        kw["dataset"] = wl.DatasetLengths(ins, outs, order=ds.get("order", "sequential"), source=ds["source"],
                                          sha256=ds["sha256"], estimated=estimated, tokenizer=tok_name)
        kw["dataset_prompts"] = prompts
    return ResolvedWorkload(**kw)


def realised(records: Any) -> dict[str, Any]:
    """Mean, p50, p99, min and max of the measured requests' input and output lengths (``RequestRecord``s)."""
    meas = [r for r in records if r.in_sample]
    out = {"input_len": wl.length_stats([r.input_len for r in meas]),
           "output_len": wl.length_stats([r.output_len for r in meas])}
    usage = [r for r in meas if r.prompt_tokens is not None]
    if usage:  # the server's own count (usage.prompt_tokens: a chat template's tokens included) beside the plan
        out["prompt_tokens"] = {**wl.length_stats([int(r.prompt_tokens) for r in usage]),
                                "differs_from_input_len": sum(1 for r in usage if r.prompt_tokens != r.input_len)}
    return out
