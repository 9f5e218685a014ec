"""What about the engine args changes with the vLLM release: the release a version names (``_version``), the
default of ``async_scheduling`` (:func:`async_scheduling_default`: on from 0.14.0), the release from which
``--use-v2-block-manager`` is a no-op, the first release with ``--data-parallel-size`` (``-dp``) and the first
without ``--num-scheduler-steps`` and ``--max-seq-len-to-capture``.  The refusals
(``_refusals.py``) read these gates; the engine's other defaults by release are in model/vllm_defaults.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: the first vLLM release whose ``async_scheduling`` defaults to on: 0.14.0's vllm/engine/arg_utils.py takes
#: ``SchedulerConfig.async_scheduling = Field(default=None)`` and vllm/config/vllm.py turns None into True unless
#: pipeline_parallel_size > 1, a non-EAGLE/MTP speculative method or an executor other than mp/uni/
#: external_launcher; 0.13.0's default is ``async_scheduling: bool = False`` (both read in the PyPI wheels)
ASYNC_SCHEDULING_DEFAULT_VERSION: tuple[int, int, int] = (0, 14, 0)
_ASYNC_EXECUTORS = (None, "mp", "uni", "external_launcher")
#: the first release whose ``--use-v2-block-manager`` is a documented no-op ("[DEPRECATED] block manager v1 has
#: been removed ... Setting this flag to True or False has no effect on vLLM behavior": vllm PR #8704), 0.6.3.post1
#: (read in its wheel's vllm/engine/arg_utils.py; 0.6.3's still chooses "BlockSpaceMangerV2 ... Set to False to use
#: BlockSpaceManagerV1").  The project reads 0.6.3.post1 as 0.6.3, so the post release is matched by its text
V2_BLOCK_MANAGER_NOOP_VERSION: tuple[int, int, int] = (0, 6, 4)
_V2_BLOCK_MANAGER_NOOP_POST = "0.6.3.post1"
#: the first release with the engine arg ``data_parallel_size`` (``--data-parallel-size``, short ``-dp``), 0.8.3: its
#: vllm/engine/arg_utils.py declares ``EngineArgs.data_parallel_size: int = 1`` and ``add_cli_args`` adds
#: ``'--data-parallel-size', '-dp'``; 0.8.2's has neither (its vllm/config.py ``ParallelConfig.data_parallel_size``
#: is set only from the ``VLLM_DP_SIZE`` environment variable), nor have 0.5.5's, 0.6.6.post1's or 0.7.3's (all read
#: in the PyPI sdists; github.com/vllm-project/vllm/blob/v0.8.3/vllm/engine/arg_utils.py)
DATA_PARALLEL_SIZE_VERSION: tuple[int, int, int] = (0, 8, 3)
#: the first release without ``--num-scheduler-steps``: V0's multi-step scheduling and its args were removed
#: (vllm PR #22138 "[V0 Deprecation] Remove multi-step scheduling", #22779 "Remove args for multi-step
#: scheduling", August 2025).  0.10.0's vllm/engine/arg_utils.py declares ``EngineArgs.num_scheduler_steps`` and
#: ``--num-scheduler-steps`` (and its V1 oracle falls back to V0 for a value other than 1); 0.10.1's and 0.11.0's
#: have neither, so their command line refuses the flag (both read in the PyPI sdists)
NUM_SCHEDULER_STEPS_REMOVED_VERSION: tuple[int, int, int] = (0, 10, 1)
#: the first release without ``--max-seq-len-to-capture``: 0.10.2's vllm/engine/arg_utils.py declares it
#: (``ModelConfig.max_seq_len_to_capture: int = 8192``, "Maximum sequence len covered by CUDA graphs. When a
#: sequence has context length larger than this, we fall back to eager mode"), 0.11.0's has no trace of it (the V0
#: model runner that read it went with V0); both read in the PyPI sdists
MAX_SEQ_LEN_TO_CAPTURE_REMOVED_VERSION: tuple[int, int, int] = (0, 11, 0)


def _version(version: Any) -> tuple[int, ...] | None:
    """``"0.9.1"`` -> (0, 9, 1); None (the newest release read) or an unreadable text -> None."""
    if version is None:
        return None
    from pytest_roofline.model import vllm_defaults  # vllm_defaults imports nothing from here

    try:
        return tuple(vllm_defaults.parse_version(str(version)))
    except ValueError:
        return None


def async_scheduling_default(version: Any, args: Mapping[str, Any]) -> bool:
    """Whether vLLM ``version`` (None: the newest release read) schedules asynchronously when ``async_scheduling``
    is not given: from 0.14.0, unless pipeline_parallel_size > 1 or the executor is not mp/uni/external_launcher
    (vllm/config/vllm.py, 0.14.0)."""
    v = _version(version)
    if v is not None and v < ASYNC_SCHEDULING_DEFAULT_VERSION:
        return False
    try:
        pp = int(args.get("pipeline_parallel_size", 1) or 1)
    except (TypeError, ValueError):
        pp = 1
    return pp == 1 and args.get("distributed_executor_backend") in _ASYNC_EXECUTORS

