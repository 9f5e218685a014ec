"""A whitespace word-level tokenizer for tests: a prompt's token count is its word count, an expectation worked
by hand (unknown words are ``<unk>``, still one token each)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def word_tokenizer(folder: Path, words: Iterable[str]) -> Path:
    """Write ``folder/tokenizer.json`` knowing ``words`` (and nothing else there: no tokenizer_config.json, so no
    chat template of its own) and return its path."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<unk>": 0, **{w: i + 1 for i, w in enumerate(sorted(set(words)))}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tokenizer.json"
    tok.save(str(path))
    return path
