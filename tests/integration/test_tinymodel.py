"""The tiny model: deterministic, offline, idempotent, and with the architecture the analytical side assumes."""

from __future__ import annotations

import json

import pytest

from pytest_roofline.measure.engine import tiny_model as tm


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tm.make_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def test_arch_constants():
    a = tm.TINY_ARCH
    assert (a.hidden_size, a.num_hidden_layers, a.num_attention_heads, a.num_key_value_heads, a.head_dim,
            a.intermediate_size) == (128, 2, 2, 1, 64, 256)
    assert a.head_dim == 64  # head_dim 16 is rejected by the CPU attention kernel (docs/sources.md, "the CPU engine")
    assert a.max_position_embeddings >= 4096
    assert tm.TINY_KV_BYTES_PER_TOKEN == a.kv_bytes_per_token == 2 * 2 * 1 * 64 * 2 == 512
    assert 2**30 // tm.TINY_KV_BYTES_PER_TOKEN == 2_097_152
    assert a.to_dict()["kv_bytes_per_token"] == 512


@pytest.mark.slow
def test_files_and_config(model_dir):
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors", tm.FINGERPRINT_FILE):
        assert (model_dir / f).is_file(), f
    cfg = json.loads((model_dir / "config.json").read_text())
    a = tm.TINY_ARCH
    assert cfg["architectures"] == ["LlamaForCausalLM"] and cfg["model_type"] == "llama"
    assert cfg["head_dim"] == 64 and cfg["num_key_value_heads"] == 1 and cfg["vocab_size"] == a.vocab_size
    assert cfg["max_position_embeddings"] == a.max_position_embeddings
    assert cfg.get("dtype", cfg.get("torch_dtype")) == "bfloat16"
    fp = json.loads((model_dir / tm.FINGERPRINT_FILE).read_text())
    assert fp["fingerprint"] == tm.fingerprint() and fp["arch"]["kv_bytes_per_token"] == 512


@pytest.mark.slow  # the module fixture it shares builds a tiny model in a child process
def test_weights_are_bf16_and_counted(model_dir):
    # read the safetensors header itself (8-byte little-endian length, then JSON): no torch in this process
    import math
    import struct

    raw = (model_dir / "model.safetensors").read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + size])
    header.pop("__metadata__", None)
    n = 0
    for k, t in header.items():
        assert t["dtype"] == "BF16", k
        n += math.prod(t["shape"])
    assert n == tm.TINY_ARCH.num_parameters
    assert (model_dir / "model.safetensors").stat().st_size < 2 * 2**20  # about 1 MB


@pytest.mark.slow  # the module fixture it shares builds a tiny model in a child process
def test_tokenizer_and_prompt_ids(model_dir):
    from tokenizers import Tokenizer  # the fast tokenizer itself: no transformers/torch in this process

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    assert tok.get_vocab_size() == tm.TINY_ARCH.vocab_size
    special = {tok.token_to_id(t) for t in tm.SPECIAL_TOKENS}
    assert special == {tm.UNK_ID, tm.BOS_ID, tm.EOS_ID} and tok.token_to_id("</s>") == tm.EOS_ID
    cfg = json.loads((model_dir / "tokenizer_config.json").read_text())
    assert cfg["eos_token"] == "</s>" and cfg["tokenizer_class"] == "PreTrainedTokenizerFast"
    usable = range(tm.PROMPT_TOKEN_ID_MIN, tm.PROMPT_TOKEN_ID_MAX + 1)
    assert not special & set(usable) and tm.PROMPT_TOKEN_ID_MAX == tok.get_vocab_size() - 1
    ids = tm.prompt_token_ids(1000, offset=5)
    assert len(ids) == 1000 and set(ids) <= set(usable)
    assert tm.prompt_token_ids(10, offset=1) != tm.prompt_token_ids(10)
    enc = tok.encode("roofline model").ids
    assert enc and len(enc) < len("roofline model")  # a trained BPE merges bytes
    assert tok.decode(enc) == "roofline model"


@pytest.mark.slow
def test_deterministic_and_idempotent(model_dir, tmp_path):
    other = tm.make_tiny_model(tmp_path / "again")
    for f in sorted(p.name for p in model_dir.iterdir()):
        assert (model_dir / f).read_bytes() == (other / f).read_bytes(), f
    mtime = (model_dir / "model.safetensors").stat().st_mtime_ns
    assert tm.make_tiny_model(model_dir) == model_dir
    assert (model_dir / "model.safetensors").stat().st_mtime_ns == mtime  # returned at once
    assert tm.is_tiny_model(model_dir) and not tm.is_tiny_model(model_dir, seed=1)
    assert tm.fingerprint(seed=1) != tm.fingerprint()


@pytest.mark.slow
def test_other_seed_other_weights(model_dir, tmp_path):
    other = tm.make_tiny_model(tmp_path / "s1", seed=1)
    assert (other / "model.safetensors").read_bytes() != (model_dir / "model.safetensors").read_bytes()
    assert (other / "tokenizer.json").read_bytes() == (model_dir / "tokenizer.json").read_bytes()


def test_refuses_to_overwrite_a_foreign_folder(tmp_path):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "precious.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        tm.make_tiny_model(d)
    assert (d / "precious.txt").read_text() == "keep me"
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]  # no temporary folder left behind


def test_default_model_dir(monkeypatch, tmp_path):
    monkeypatch.delenv(tm.ENV_MODEL_DIR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert tm.default_model_dir() == tmp_path / "pytest-roofline" / f"tiny-llama-{tm.fingerprint()}"
    monkeypatch.setenv(tm.ENV_MODEL_DIR, str(tmp_path / "override"))
    assert tm.default_model_dir() == tmp_path / "override"
