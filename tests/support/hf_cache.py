"""A Hugging Face hub cache laid out on disk, as ``huggingface_hub`` writes one (``models--OWNER--NAME/refs/main``
holding a commit hash, the files under ``snapshots/<hash>/``), so a test resolves a Hub model id with no network.

``QWEN25_14B_INSTRUCT`` is Qwen/Qwen2.5-14B-Instruct's config.json in the keys that count: 48 layers, 40 query and
8 KV heads (its model card, huggingface.co/Qwen/Qwen2.5-14B-Instruct), hidden 5,120, intermediate 13,824 (the
Qwen2.5-14B config.json), vocabulary 152,064, untied embeddings. Its parameter count worked out by hand:
embeddings and lm_head 2 × 152,064 × 5,120 = 1,557,135,360; a layer: q 5,120² + 5,120 (bias), k and v
5,120 × 1,024 + 1,024 each, o 5,120², gate/up/down 3 × 5,120 × 13,824, two norms 2 × 5,120 = 275,268,608;
48 layers + the final norm (5,120) → 14,770,033,664.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

QWEN25_14B_ID = "Qwen/Qwen2.5-14B-Instruct"
QWEN25_14B_PARAMS = 14_770_033_664
QWEN25_14B_INSTRUCT: dict[str, Any] = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120,
    "intermediate_size": 13824, "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8,
    "vocab_size": 152064, "tie_word_embeddings": False, "max_position_embeddings": 32768,
    "max_window_layers": 70, "sliding_window": 131072, "use_sliding_window": False, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "torch_dtype": "bfloat16",
}
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def lay_out(cache: Path, repo_id: str, files: dict[str, Any]) -> Path:
    """Write ``files`` (name -> JSON value) as ``repo_id``'s snapshot in the hub cache at ``cache``; the
    snapshot folder."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(COMMIT, encoding="utf-8")
    snap = repo / "snapshots" / COMMIT
    snap.mkdir(parents=True, exist_ok=True)
    for name, value in files.items():
        (snap / name).write_text(json.dumps(value), encoding="utf-8")
    return snap
