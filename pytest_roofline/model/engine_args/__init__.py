"""Which ``engine.args`` the models honour, and the refusal of every other one at its YAML field (the one home).

A prediction file's ``engine.args`` are vLLM's engine arguments (``vllm serve --max-num-seqs 64`` is
``max_num_seqs: 64``).  An arg is in exactly one of these groups:

* **modelled** (:data:`MODELLED_ARGS`): the setup, the KV accounting or the serving model reads it;
* **no timing effect** (:data:`NO_TIMING_EFFECT_ARGS`): server plumbing, logging, where the weights come from;
* **refused at a value the models do not simulate** (``_refusals._REFUSED_ARGS``): accepted at the value that leaves
  the engine as modelled (``num_scheduler_steps: 1``, ``cpu_offload_gb: 0``, ``scheduling_policy: fcfs``), refused
  at any other.  Some change only the serving model's step timing (multi-step scheduling, async scheduling, eager
  mode on a GPU): the roofline, the KV pool and the closed forms still hold, so they are refused only where the
  serving model runs (``scope="serving"``).  The others change what every model computes (weights off the GPU,
  draft tokens above the decode roofline, more than one engine): refused everywhere (``scope="setup"``, checked as
  the setup is built);
* anything else is not an arg the models know, so no one can say whether it changes a figure: refused, with the
  nearest known name when it looks like a typo (``tensor_paralel_size``).

Nothing is ignored silently: a figure computed as if an arg were absent would be confidently wrong.  Every bad arg
of a setup is reported at once (:class:`EngineArgsError`, one line per arg, each naming its field).

Spellings are read as vLLM's own command line reads them (:func:`normalise_engine_args`): ``max-num-seqs`` is
``max_num_seqs`` (argparse's dest), the short aliases ``tp``/``pp``/``dp``/``q``/``O`` are their long arguments
(vllm/engine/arg_utils.py ``add_cli_args``: ``-tp``, ``-pp``, ``-q``, ``-O`` in 0.8.0 ... 0.10.2, ``-dp`` from
0.8.3), and ``no_enable_prefix_caching: true`` is ``enable_prefix_caching: false`` (argparse's
``BooleanOptionalAction``, ``--no-enable-prefix-caching``).  On/off args are read by one reader, :func:`read_flag`
(the check, the setup and the serving model alike), and a value-carrying arg is on unless :func:`is_off`.

This package is the front door: every public name is re-exported here from the private module that holds its
concept (a module imports only those above it in this list, and nothing from a layer above model/):

================  ================================================================================================
``_flags``        the on/off reader: :data:`FLAG_ARGS`, :func:`read_flag`, :func:`flag_arg`, :func:`is_off`
``_problems``     how bad args are reported: :class:`Problem`, :class:`EngineArgsError` (every bad arg at once)
``_spellings``    the spellings: :data:`ALIASES`, the ``no_`` forms, :func:`canonical_key`,
                  :func:`normalise_engine_args`
``_releases``     what changes with the vLLM release: :func:`async_scheduling_default`
                  (:data:`ASYNC_SCHEDULING_DEFAULT_VERSION`), ``V2_BLOCK_MANAGER_NOOP_VERSION``,
                  ``DATA_PARALLEL_SIZE_VERSION`` (``data_parallel_size``/``dp`` is refused before 0.8.3)
``_env``          the engine's environment: :data:`ENV_READ`, :data:`ENV_NO_TIMING_EFFECT`,
                  :data:`ENV_NOT_SIMULATED`, :func:`env_problems`
``_refusals``     the tables (:data:`MODELLED_ARGS`, :data:`NO_TIMING_EFFECT_ARGS`, ``_REFUSED_ARGS``,
                  :data:`KNOWN_ARGS`, :data:`Scope`, the launchable :data:`EXECUTOR_BACKENDS`, the setup's figures some
                  refusals read, :class:`SetupFacts`) and the check:
                  :func:`engine_arg_problems`,
                  :func:`check_engine_args`
================  ================================================================================================
"""

from __future__ import annotations

from pytest_roofline.model.engine_args._env import ENV_NO_TIMING_EFFECT as ENV_NO_TIMING_EFFECT
from pytest_roofline.model.engine_args._env import ENV_NOT_SIMULATED as ENV_NOT_SIMULATED
from pytest_roofline.model.engine_args._env import ENV_READ as ENV_READ
from pytest_roofline.model.engine_args._env import env_problems as env_problems
from pytest_roofline.model.engine_args._flags import FLAG_ARGS as FLAG_ARGS
from pytest_roofline.model.engine_args._flags import flag_arg as flag_arg
from pytest_roofline.model.engine_args._flags import is_off as is_off
from pytest_roofline.model.engine_args._flags import read_flag as read_flag
from pytest_roofline.model.engine_args._problems import EngineArgsError as EngineArgsError
from pytest_roofline.model.engine_args._problems import Problem as Problem
from pytest_roofline.model.engine_args._refusals import KNOWN_ARGS as KNOWN_ARGS
from pytest_roofline.model.engine_args._refusals import MODELLED_ARGS as MODELLED_ARGS
from pytest_roofline.model.engine_args._refusals import NO_TIMING_EFFECT_ARGS as NO_TIMING_EFFECT_ARGS
from pytest_roofline.model.engine_args._refusals import Scope as Scope
from pytest_roofline.model.engine_args._refusals import SetupFacts as SetupFacts
from pytest_roofline.model.engine_args._refusals import check_engine_args as check_engine_args
from pytest_roofline.model.engine_args._refusals import engine_arg_problems as engine_arg_problems
from pytest_roofline.model.engine_args._releases import (
    ASYNC_SCHEDULING_DEFAULT_VERSION as ASYNC_SCHEDULING_DEFAULT_VERSION,
)
from pytest_roofline.model.engine_args._releases import DATA_PARALLEL_SIZE_VERSION as DATA_PARALLEL_SIZE_VERSION
from pytest_roofline.model.engine_args._releases import V2_BLOCK_MANAGER_NOOP_VERSION as V2_BLOCK_MANAGER_NOOP_VERSION
from pytest_roofline.model.engine_args._releases import async_scheduling_default as async_scheduling_default
from pytest_roofline.model.engine_args._spellings import ALIASES as ALIASES
from pytest_roofline.model.engine_args._spellings import EXECUTOR_BACKENDS as EXECUTOR_BACKENDS
from pytest_roofline.model.engine_args._spellings import HUMAN_READABLE_INT_ARGS as HUMAN_READABLE_INT_ARGS
from pytest_roofline.model.engine_args._spellings import ExecutorBackend as ExecutorBackend
from pytest_roofline.model.engine_args._spellings import canonical_key as canonical_key
from pytest_roofline.model.engine_args._spellings import executor_backend as executor_backend
from pytest_roofline.model.engine_args._spellings import normalise_engine_args as normalise_engine_args
from pytest_roofline.model.engine_args._spellings import whole_arg_value as whole_arg_value

__all__ = ["MODELLED_ARGS", "NO_TIMING_EFFECT_ARGS", "KNOWN_ARGS", "FLAG_ARGS", "ALIASES", "Scope", "Problem",
           "EXECUTOR_BACKENDS", "ExecutorBackend", "executor_backend",
           "EngineArgsError", "is_off", "read_flag", "flag_arg", "canonical_key", "normalise_engine_args",
           "HUMAN_READABLE_INT_ARGS", "whole_arg_value",
           "engine_arg_problems", "check_engine_args", "SetupFacts", "ASYNC_SCHEDULING_DEFAULT_VERSION",
           "async_scheduling_default", "ENV_READ", "ENV_NO_TIMING_EFFECT", "ENV_NOT_SIMULATED", "env_problems"]
