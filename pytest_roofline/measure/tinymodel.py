"""A tiny Llama model made offline, deterministically, for vLLM's CPU backend.

Nothing is downloaded: the tokenizer is a byte-level BPE trained in-process with
``tokenizers`` on fixed text, and the weights are drawn from a seeded generator.

The architecture (config.json, parameter and KV counts, why head_dim is 64) is a model fact and lives in
``pytest_roofline/model/tiny.py``; this module builds that exact model.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from pytest_roofline.model.tiny import (
    BOS_ID,
    EOS_ID,
    SPECIAL_TOKENS,
    TINY_ARCH,
    TINY_MODEL,
    UNK_ID,
    TinyArch,
    config_dict,
)

__all__ = [
    "TINY_MODEL",
    "TinyArch",
    "TINY_ARCH",
    "config_dict",
    "TINY_KV_BYTES_PER_TOKEN",
    "SPECIAL_TOKENS",
    "PROMPT_TOKEN_ID_MIN",
    "PROMPT_TOKEN_ID_MAX",
    "prompt_token_ids",
    "fingerprint",
    "default_model_dir",
    "is_tiny_model",
    "make_tiny_model",
    "FINGERPRINT_FILE",
]

# Bump when the generator changes in a way that changes the produced files.
_GENERATOR_VERSION = 1
FINGERPRINT_FILE = "roofline-tiny-model.json"
ENV_MODEL_DIR = "ROOFLINE_TINY_MODEL_DIR"


TINY_KV_BYTES_PER_TOKEN = TINY_ARCH.kv_bytes_per_token  # 512

# Token ids a prompt may use: every id that is not a special token.
PROMPT_TOKEN_ID_MIN = len(SPECIAL_TOKENS)
PROMPT_TOKEN_ID_MAX = TINY_ARCH.vocab_size - 1  # inclusive


def prompt_token_ids(length: int, *, offset: int = 0) -> list[int]:
    """A deterministic prompt of ``length`` non-special token ids (``offset`` varies it)."""
    span = PROMPT_TOKEN_ID_MAX - PROMPT_TOKEN_ID_MIN + 1
    return [PROMPT_TOKEN_ID_MIN + (offset + i) % span for i in range(length)]


# Fixed training text for the BPE (enough distinct pairs to reach the vocab size).
_TRAINING_TEXT = [
    "The quick brown fox jumps over the lazy dog.",
    "Pack my box with five dozen liquor jugs.",
    "How vexingly quick daft zebras jump!",
    "Sphinx of black quartz, judge my vow.",
    "A roofline model bounds throughput by compute and by memory bandwidth.",
    "Prefill is compute bound; decode is memory bound at small batch sizes.",
    "The key-value cache grows with every generated token of every sequence.",
    "Time to first token, inter-token latency and end-to-end latency are measured per request.",
    "Little's law: the mean number in flight equals throughput times mean latency.",
    "0123456789 10 20 30 40 50 60 70 80 90 100 1000 2048 4096",
    "serving engines batch requests continuously and preempt when the cache is full.",
    "tokens per second, requests per second, gigabytes per second, teraflops.",
]


def fingerprint(*, seed: int = 0) -> str:
    """A short hash of everything that determines the produced model."""
    payload = json.dumps(
        {
            "generator": _GENERATOR_VERSION,
            "seed": seed,
            "config": config_dict(),
            "special": list(SPECIAL_TOKENS),
            "text": _TRAINING_TEXT,
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


def default_model_dir(*, seed: int = 0) -> Path:
    """``$ROOFLINE_TINY_MODEL_DIR`` if set, else ``~/.cache/pytest-roofline/tiny-llama-<fingerprint>``."""
    env = os.environ.get(ENV_MODEL_DIR)
    if env:
        return Path(env).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "pytest-roofline" / f"tiny-llama-{fingerprint(seed=seed)}"


_REQUIRED_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json")


def is_tiny_model(path: Path, *, seed: int = 0) -> bool:
    """True when ``path`` already holds the tiny model for ``seed`` (fingerprint file matches)."""
    path = Path(path)
    fp = path / FINGERPRINT_FILE
    try:
        data = json.loads(fp.read_text())
    except (OSError, ValueError):
        return False
    if data.get("fingerprint") != fingerprint(seed=seed):
        return False
    if not all((path / f).is_file() for f in _REQUIRED_FILES):
        return False
    return any(path.glob("*.safetensors"))


def _train_tokenizer(vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=1,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_TRAINING_TEXT, trainer=trainer)
    if tok.get_vocab_size() != vocab_size:
        raise RuntimeError(
            f"tiny tokenizer trained to {tok.get_vocab_size()} tokens, expected {vocab_size}"
        )
    for i, s in enumerate(SPECIAL_TOKENS):
        assert tok.token_to_id(s) == i, (s, tok.token_to_id(s))
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token=SPECIAL_TOKENS[UNK_ID],
        bos_token=SPECIAL_TOKENS[BOS_ID],
        eos_token=SPECIAL_TOKENS[EOS_ID],
        model_max_length=TINY_ARCH.max_position_embeddings,
    )


def _build_model(seed: int):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = dict(config_dict())
    cfg.pop("architectures")
    cfg.pop("model_type")
    config = LlamaConfig(**cfg)
    config.architectures = ["LlamaForCausalLM"]
    model = LlamaForCausalLM(config)
    # Draw every weight ourselves from one seeded generator, in name order, so the
    # result does not depend on transformers' init scheme or global RNG state.
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            if p.dim() == 1:  # RMSNorm weights
                p.fill_(1.0)
            else:
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32) * 0.02)
    model = model.bfloat16()  # every floating parameter and buffer, as .to(torch.bfloat16) does
    n = sum(p.numel() for p in model.parameters())
    if n != TINY_ARCH.num_parameters:
        raise RuntimeError(f"tiny model has {n} parameters, expected {TINY_ARCH.num_parameters}")
    return model


def _portable_tokenizer_config(folder: Path) -> None:
    # transformers 5 writes tokenizer_class "TokenizersBackend", which transformers 4 does not
    # know; "PreTrainedTokenizerFast" loads in both (5.x maps it to the same class).
    p = folder / "tokenizer_config.json"
    cfg = json.loads(p.read_text())
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    p.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def _refuse_foreign(dest: Path) -> None:
    """``FileExistsError`` when ``dest`` holds something that is not a tiny model of ours (no fingerprint file)
    and is not an empty folder: never delete a folder we did not make."""
    if dest.exists() and not (dest / FINGERPRINT_FILE).exists() and not (dest.is_dir() and not any(dest.iterdir())):
        raise FileExistsError(f"{dest} exists and does not hold the tiny model; refusing to overwrite it")


def make_tiny_model(dest: Path, *, seed: int = 0) -> Path:
    """Make the tiny Llama model in ``dest`` (in a child process); return ``dest``.

    torch and transformers are imported only in the child: loaded into a long-lived pytest process that also
    runs the load generator and engine tests, the model build crashed that process (a segmentation fault seen
    in a full test run). A failure raises with the child's error; a foreign folder at ``dest`` raises
    ``FileExistsError`` as the in-process builder does.
    """
    import subprocess
    import sys

    dest = Path(dest).expanduser()
    if is_tiny_model(dest, seed=seed):
        return dest
    _refuse_foreign(dest)  # before the child spends seconds importing torch
    proc = subprocess.run([sys.executable, "-m", "pytest_roofline.measure.tinymodel", str(dest), str(seed)],
                          capture_output=True, text=True)
    if proc.returncode == 3:
        raise FileExistsError(proc.stderr.strip().splitlines()[-1])
    if proc.returncode != 0:
        raise RuntimeError(f"making the tiny model in {dest} failed:\n{proc.stderr[-3000:]}")
    return dest


def _make_tiny_model_here(dest: Path, *, seed: int = 0) -> Path:
    """Make the tiny Llama model (tokenizer + bf16 weights) in ``dest``; return ``dest``.

    Deterministic for a given ``seed`` and fully offline. Idempotent: when ``dest``
    already holds the same model (fingerprint file), returns at once. Writes into a
    temporary sibling folder and renames it into place, so a crash never leaves a
    half-written model that looks complete.
    """
    dest = Path(dest).expanduser()
    if is_tiny_model(dest, seed=seed):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        tokenizer = _train_tokenizer(TINY_ARCH.vocab_size)
        model = _build_model(seed)
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        _portable_tokenizer_config(tmp)
        (tmp / FINGERPRINT_FILE).write_text(
            json.dumps(
                {
                    "fingerprint": fingerprint(seed=seed),
                    "seed": seed,
                    "generator": _GENERATOR_VERSION,
                    "arch": TINY_ARCH.to_dict(),
                    "prompt_token_id_range": [PROMPT_TOKEN_ID_MIN, PROMPT_TOKEN_ID_MAX],
                },
                indent=2,
                sort_keys=True,
            )
            + "\n"
        )
        if dest.exists():
            # Something else (stale or foreign) is there: replace it only if it is ours
            # or empty; never delete a folder we did not make.
            if is_tiny_model(dest, seed=seed):
                return dest
            _refuse_foreign(dest)
            shutil.rmtree(dest)
        try:
            os.replace(tmp, dest)
        except OSError:
            # Another process won the race.
            if is_tiny_model(dest, seed=seed):
                return dest
            raise
        return dest
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":  # the child of make_tiny_model: DEST SEED
    import sys as _sys

    try:
        _make_tiny_model_here(Path(_sys.argv[1]), seed=int(_sys.argv[2]))
    except FileExistsError as _exc:
        print(_exc, file=_sys.stderr)
        raise SystemExit(3) from None
