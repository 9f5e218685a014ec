"""Datasets through the chat API, as ``vllm bench serve --backend openai-chat`` sends them: each entry's text is the
one user message (ShareGPT: the first human turn; JSONL: the configured prompt field), ``max_completion_tokens``
its output length, and the serving model is charged the prompt tokens the server will see: the text's tokens plus
what the chat template adds (measure/workloads.py).

The fixtures are tests/data/chat_dataset.sharegpt.json and tests/data/chat_dataset.jsonl (3 entries each). Lengths
are worked by hand with a whitespace word-level tokenizer (a token is a whitespace-separated word) and the
one-line template ``user: {text}\\nassistant:`` (2 words around the text); every expected value is in the comment
above its assertion. The live check against the CPU engine is in tests/test_workloads.py
(``test_cpu_engine_counts_exactly_the_drawn_prompt_tokens``, whose engine is started with that template).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support import word_tokenizer as _tokenizers
from support.openai_stub import StubServer
from support.paths import DATA
from support.specs import tiny_cpu_spec

from pytest_roofline.format.spec import load_spec
from pytest_roofline.measure.loadgen import LoadSpec, run_load
from pytest_roofline.measure.loadgen import datasets as mw
from pytest_roofline.measure.loadgen._prompts import BodyTemplate, PromptMaker, request_body
from pytest_roofline.model import workload as wl

SHAREGPT = DATA / "chat_dataset.sharegpt.json"
JSONL = DATA / "chat_dataset.jsonl"

# the template of tests/test_engine_command.py's chat tests: "user: <text>\nassistant:" for one user message
TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"

# the exact request bodies (json.dumps with separators=(",", ":"): JSON escapes for the quote, the newline and
# the non-ASCII characters), written by hand from the fixture files
TAIL = b',"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}'
SHAREGPT_BODIES = [
    # entry 0: the first human turn; its output length is the gpt turn "A bound on throughput." = 4 words
    b'{"model":"m","messages":[{"role":"user","content":"What is a roofline?"}],"max_completion_tokens":4' + TAIL,
    # entry 1: only the first human turn ("and again", the third turn, is not sent); "hi" = 1 word
    b'{"model":"m","messages":[{"role":"user","content":"Say \\"hi\\"\\nthen stop."}],"max_completion_tokens":1'
    + TAIL,
    # entry 2: e-acute is U+00E9, the hot beverage U+2615; "Yes." = 1 word
    b'{"model":"m","messages":[{"role":"user","content":"caf\\u00e9 \\u2615"}],"max_completion_tokens":1' + TAIL,
]
JSONL_BODIES = [
    # the "question" field (prompt_field: question); output_len 12, max_tokens 3, then the workload's output_len 8
    b'{"model":"m","messages":[{"role":"user","content":"Explain the KV cache."}],"max_completion_tokens":12'
    + TAIL,
    b'{"model":"m","messages":[{"role":"user","content":"Two\\nlines"}],"max_completion_tokens":3' + TAIL,
    b'{"model":"m","messages":[{"role":"user","content":"No length here"}],"max_completion_tokens":8' + TAIL,
]


def word_tokenizer(tmp_path: Path) -> Path:
    """A whitespace word-level tokenizer.json (unknown words are <unk>, still one token each), in a folder of its
    own without a tokenizer_config.json (so no chat template of its own)."""
    words = {w for f in (SHAREGPT, JSONL) for w in f.read_text(encoding="utf-8").split()}
    return _tokenizers.word_tokenizer(tmp_path / "tok", words)


def dataset_cfg(path: Path, **kw: str) -> dict:
    fmt = "jsonl" if path.suffix == ".jsonl" else "sharegpt"
    return {"path": str(path), "source": path.name, "format": fmt, "order": "sequential",
            "sha256": __import__("hashlib").sha256(path.read_bytes()).hexdigest(), **kw}


def chat_load(shape: mw.ResolvedWorkload, **kw: object) -> LoadSpec:
    base: dict = dict(model="m", token_id_range=(3, 300), mode="closed", concurrency=1, num_requests=3,
                      warmup_requests=0, input_len=16, output_len=8, api="chat")
    base.update(kw)
    s = LoadSpec(**base, **shape.load_kwargs())
    s.validate()
    return s


# ------------------------------------------------------------------------------------------ the bodies


def test_sharegpt_entries_go_out_as_their_first_human_turn(tmp_path):
    shape = mw.resolve({"api": "chat", "dataset": dataset_cfg(SHAREGPT, tokenizer=str(word_tokenizer(tmp_path)))},
                       for_load=True)
    spec = chat_load(shape)
    maker, tmpl = PromptMaker(spec), BodyTemplate(spec)
    # requests 0, 1, 2 take entries 0, 1, 2 (order: sequential); each prompt is the entry's text, not token ids
    assert maker.many(range(3)) == ["What is a roofline?", 'Say "hi"\nthen stop.', "café ☕"]
    bodies = [tmpl.body(maker(i), maker.lengths(i)[1]) for i in range(3)]
    assert bodies == SHAREGPT_BODIES
    # the fast serialiser writes what json.dumps writes of request_body
    for i, b in enumerate(bodies):
        assert json.loads(b) == request_body(spec, maker(i), maker.lengths(i)[1])


def test_jsonl_entries_go_out_as_their_configured_prompt_field(tmp_path):
    spec_file = tmp_path / "chat.yaml"
    tok = json.dumps(str(word_tokenizer(tmp_path)))
    spec_file.write_text(tiny_cpu_spec(
        "  api: chat\n  output_len: 8\n"
        f"  dataset: {{path: {json.dumps(str(JSONL))}, prompt_field: question, tokenizer: {tok}}}\n",
        concurrency=1, requests=3))
    spec = load_spec(spec_file)
    shape = mw.resolve(spec.workload, for_load=True)
    load = chat_load(shape)
    maker, tmpl = PromptMaker(load), BodyTemplate(load)
    assert [tmpl.body(maker(i), maker.lengths(i)[1]) for i in range(3)] == JSONL_BODIES
    # a 4th request takes entry 0 again (sequential order cycles)
    assert maker(3) == "Explain the KV cache." and maker.lengths(3)[1] == 12


def test_a_prompt_text_holding_the_max_tokens_key_keeps_its_text():
    """The per-request max tokens are written after the prompt, never inside a text that spells the key."""
    ds = wl.DatasetLengths((9,), (5,))
    text = 'write "max_completion_tokens":8 please'
    spec = LoadSpec(model="m", token_id_range=(3, 300), concurrency=1, num_requests=1, output_len=8, api="chat",
                    dataset=ds, dataset_texts=(text,))
    spec.validate()
    body = json.loads(BodyTemplate(spec).body(text, 5))
    assert body["messages"][0]["content"] == text and body["max_completion_tokens"] == 5


def test_a_text_prompt_needs_the_chat_api_and_one_text_per_entry():
    ds = wl.DatasetLengths((9, 4), (None, None))
    base = dict(model="m", token_id_range=(3, 300), concurrency=1, num_requests=2, dataset=ds)
    with pytest.raises(ValueError, match="chat API only"):
        LoadSpec(**base, dataset_texts=("a", "b")).validate()  # api: completions
    with pytest.raises(ValueError, match="dataset_texts must hold"):
        LoadSpec(**base, api="chat", dataset_texts=("a",)).validate()  # 2 entries, 1 text
    with pytest.raises(ValueError, match="chat API only"):
        request_body(LoadSpec(**{**base, "dataset": None}), "text")


# ------------------------------------------------------------------------------------------ the model side


def test_chat_lengths_are_the_text_plus_the_rendered_templates_tokens(tmp_path):
    pytest.importorskip("transformers")
    tok = word_tokenizer(tmp_path)
    shape = mw.resolve({"api": "chat", "dataset": dataset_cfg(SHAREGPT, tokenizer=str(tok))}, chat_template=TEMPLATE)
    # "user: What is a roofline?\nassistant:" = user:, What, is, a, roofline?, assistant: = 6 words (text: 4);
    # 'user: Say "hi"\nthen stop.\nassistant:' = 6 (text: Say, "hi", then, stop. = 4); "user: café ☕\nassistant:"
    # = 4 (text 2): the template adds 2 each
    assert shape.dataset.input_lens == (6, 6, 4) and not shape.dataset.estimated
    assert shape.chat is not None and shape.chat.method == "chat template"
    assert shape.chat.template == "engine.args.chat_template" and shape.chat.template_tokens == (2, 2, 2)
    assert shape.chat.text_tokens == (4, 4, 2) and shape.dataset.output_lens == (4, 1, 1)
    assert shape.dataset_texts == ("What is a roofline?", 'Say "hi"\nthen stop.', "café ☕")
    # the serving model is charged those lengths: request_lengths of the shared description (entries 0, 1, 2, 0)
    lens = wl.request_lengths(4, input_len=wl.LengthDist(16), output_len=wl.LengthDist(8),
                              dataset=shape.serving_kwargs()["dataset"])
    assert lens.input_lens == [6, 6, 4, 6] and lens.output_lens == [4, 1, 1, 4]
    # the template from a file, as vLLM's --chat-template reads a path; and the tokenizer's own template
    f = tmp_path / "t.jinja"
    f.write_text(TEMPLATE)
    assert mw.resolve({"api": "chat", "dataset": dataset_cfg(SHAREGPT, tokenizer=str(tok))},
                      chat_template=str(f)).dataset.input_lens == (6, 6, 4)
    (tok.parent / "tokenizer_config.json").write_text(json.dumps({"chat_template": TEMPLATE}))
    own = mw.resolve({"api": "chat", "dataset": dataset_cfg(SHAREGPT, tokenizer=str(tok))})
    assert own.dataset.input_lens == (6, 6, 4) and own.chat.template == "the tokenizer's"


def test_without_a_template_or_transformers_the_overhead_is_the_documented_estimate(tmp_path, monkeypatch):
    tok = word_tokenizer(tmp_path)
    cfg = dataset_cfg(SHAREGPT, tokenizer=str(tok))
    # no template anywhere (the word tokenizer has no tokenizer_config.json): 4, 4, 2 words + 4 + 3 = 11, 11, 9
    # (OpenAI's cookbook: 3 per message + 1 for the role "user", 3 priming the reply)
    shape = mw.resolve({"api": "chat", "dataset": cfg})
    assert shape.dataset.input_lens == (11, 11, 9) and shape.dataset.estimated
    assert shape.chat.method == "per-message estimate" and "no chat template" in shape.chat.template
    # transformers missing: the same estimate, saying so
    monkeypatch.setitem(sys.modules, "transformers", None)
    mw._CHAT_MEM.clear()
    shape = mw.resolve({"api": "chat", "dataset": cfg}, chat_template=TEMPLATE)
    assert shape.dataset.input_lens == (11, 11, 9) and "transformers is not installed" in shape.chat.template
    # no tokenizer at all: sending needs none (the text is sent); the lengths are chars/4 + 7: "What is a
    # roofline?" = 19 chars -> 5 -> 12; 'Say "hi"\nthen stop.' = 19 chars -> 12; "café ☕" = 6 chars -> 2 -> 9
    bare = mw.resolve({"api": "chat", "dataset": {**cfg, "tokenizer": None}}, for_load=True)
    assert bare.dataset.input_lens == (12, 12, 9) and bare.dataset_texts[2] == "café ☕"
    d = bare.to_dict()
    assert d["dataset"]["estimated"] is True and d["chat"]["prompt_tokens"] == "per-message estimate"
    assert d["chat"]["template_tokens"]["mean"] == 7 and d["chat"]["template"] == "no tokenizer"
    json.dumps(d)


def test_the_sweep_counts_with_the_template_the_engine_is_given(tmp_path):
    """``engine.args.chat_template`` (the file the server is started with) is the template the model side renders,
    and the scorer's simulation is charged those lengths."""
    pytest.importorskip("transformers")
    from pytest_roofline import scoring
    from pytest_roofline.measure import sweep
    from pytest_roofline.model.setup import build_setup

    template = tmp_path / "chat.jinja"
    template.write_text(TEMPLATE)
    tok = word_tokenizer(tmp_path)
    f = tmp_path / "c.yaml"
    f.write_text(tiny_cpu_spec(
        "  api: chat\n  output_len: 8\n"
        f"  dataset: {{path: {json.dumps(str(SHAREGPT))}, tokenizer: {json.dumps(str(tok))}}}\n",
        concurrency=2, requests=6, engine_args=f"max_num_seqs: 8, chat_template: {template}"))
    spec = load_spec(f)
    shape = sweep.workload_shape(spec, for_load=True)
    assert shape.dataset.input_lens == (6, 6, 4) and shape.chat.template == "engine.args.chat_template"
    setup = build_setup(hardware_ref=spec.hardware, model_ref=spec.model, engine=spec.engine, workload=spec.workload)
    served = scoring.serving_sweep_for(spec, None, setup)
    work = served.workload(next(p for p in served.points if p.id == "closed-c2"))
    assert work.dataset.input_lens == (6, 6, 4)


# ------------------------------------------------------------------------------------------ over real HTTP


@pytest.fixture
def chat_server(stub_server) -> StubServer:
    """Logs each chat request (its messages and max_completion_tokens); answers with a stream of that many tokens
    and ``usage.prompt_tokens`` = the user message's words + 2 (the test's template)."""
    return stub_server(template_tokens=2)


def test_the_messages_arrive_as_written_and_usage_is_recorded_beside_the_plan(chat_server, tmp_path):
    pytest.importorskip("transformers")
    shape = mw.resolve({"api": "chat", "dataset": dataset_cfg(SHAREGPT, tokenizer=str(word_tokenizer(tmp_path)))},
                       for_load=True, chat_template=TEMPLATE)
    # 1 warm-up request (entry 0 of the warm-up phase), then 4 measured: entries 0, 1, 2, 0
    res = run_load(chat_server.url, chat_load(shape, concurrency=2, num_requests=4, warmup_requests=1))
    assert all(r.ok for r in res.records), [r.error for r in res.records]
    by_index = {int(q.rid.rsplit("-", 1)[1]): q.body for q in chat_server.posts}
    texts = ["What is a roofline?", 'Say "hi"\nthen stop.', "café ☕"]
    expect = [texts[0]] + [texts[k % 3] for k in range(4)]
    assert [by_index[i]["messages"] for i in range(5)] == [[{"role": "user", "content": t}] for t in expect]
    # max_completion_tokens: the gpt turns' 4, 1, 1 words; ignore_eos so the server sends exactly that many
    assert [by_index[i]["max_completion_tokens"] for i in range(5)] == [4, 4, 1, 1, 4]
    assert all(by_index[i]["ignore_eos"] is True and "prompt" not in by_index[i] for i in range(5))
    recs = sorted(res.records, key=lambda r: r.index)
    # planned (the template count: 6, 6, 4) and the server's usage (words + 2, the same here) per request
    assert [r.input_len for r in recs] == [6, 6, 6, 4, 6] and [r.prompt_tokens for r in recs] == [6, 6, 6, 4, 6]
    assert [r.completion_tokens for r in recs] == [4, 4, 1, 1, 4]
    real = mw.realised(res.records)
    # measured requests only (the warm-up left out): 6, 6, 4, 6 -> mean 5.5; none differs from its plan
    assert real["prompt_tokens"]["mean"] == 5.5 and real["prompt_tokens"]["differs_from_input_len"] == 0
    assert real["input_len"]["mean"] == 5.5
