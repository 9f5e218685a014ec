"""The step-level serving model of vLLM: predict a whole sweep from the spec sheet.

A pure-Python, discrete-event simulation of a vLLM V1-style engine (model layer: imports only ``errors``,
``units`` and ``pytest_roofline.model.*``; no pytest, no I/O; numpy only through ``model.workload``, whose
open-loop arrival schedule is the load generator's own, drawn with numpy). This front door re-exports the public
API; each concept has its own module:

==================  ============================================================================================
``point``           what one sweep point sends: ``ArrivalKind``, ``Workload``, ``workload_for_point``,
                    ``arrival_times`` (the load generator's open-loop schedule)
``engine``          ``EngineConfig`` (scheduler limits, block size, KV pool, V1/V0, prefix caching, TP) and
                    ``kv_accounting``
``constants``       ``ServingConstants``, ``default_constants``, ``CONSTANT_SOURCES`` (the public source of each
                    default), ``KERNELS_PER_LAYER``
``cost``            the step cost: ``CostModel`` (per-setup coefficients), ``step_cost`` / ``StepCost``
``scheduler``       the policy contract: ``Scheduler.schedule(state) -> Batch`` over a ``SchedulerState``,
                    and ``Request``, the simulated request
``scheduler_v1``    ``V1Scheduler``: vLLM V1, chunked prefill, FCFS
``scheduler_v0``    ``V0Scheduler``: the 0.5-era V0 default, whole prefills or decodes
``prediction``      ``PointPrediction``, ``StepRecord`` and the percentile arithmetic
``simulator``       the step loop (arrivals, block pool, step accounting, the bulk decode path): ``simulate``,
                    ``simulate_sweep``; ``client_send_delays_s`` (each request's jittered frontend delay)
==================  ============================================================================================

Public API (the interface the other layers code against)
---------------------------------------------------------
``ArrivalKind``            CLOSED (C clients, each sends its next request when its previous one finished),
                           POISSON, GAMMA (open loop, ``burstiness`` = gamma shape, as ``vllm bench serve``).
``LengthDist``             token lengths (``model.workload.LengthDist``, the load generator's own): ``fixed``,
                           ``uniform``, ``normal``, ``file``; per-request draws by ``workload.request_lengths``.
``Workload``               lengths, request count, arrival process, seed and ``point_id`` (with the seed, they
                           seed the arrival schedule exactly as the load generator's ``LoadSpec.seed`` and
                           ``point_id`` do: ``model.workload.arrival_offsets_s``), ``ignore_eos``,
                           ``prefix_hit_rate``, and the shared workload description: ``dataset``
                           (``workload.DatasetLengths``), ``prefix_share`` / ``shared_prefix_len``, ``ramp_up``,
                           ``warmup_requests`` (not simulated; their prefixes are cached before the point).
``EngineConfig``           scheduler limits, block size, KV pool (``num_gpu_blocks``), chunked prefill (V1) or
                           not (0.5-era V0), prefix caching, TP; ``EngineConfig.from_setup(setup)``.
``ServingConstants``       the efficiency fractions and overheads; ``default_constants(setup)`` documents each
                           default's public source; ``replace``/``to_dict``/``from_dict``; ``FIELDS_FITTABLE``.
``StepCost`` / ``step_cost``  one engine step's time and its terms.
``PointPrediction``        one sweep point's predicted metrics (``to_dict``).
``simulate(setup, workload, engine=, constants=, trace=)`` / ``simulate_sweep`` / ``workload_for_point`` /
``kv_accounting(setup)`` (the KV pool ``EngineConfig.from_setup`` uses) / ``StepRecord`` (``trace``) /
``CONSTANT_SOURCES``.

Refinements of the agreed interface: ``ServingConstants`` also carries ``allreduce_latency_s`` (the catalog has
link bandwidths but no latencies) and ``host_mem_bytes_per_s`` / ``host_peak_flop_per_s`` (stand-ins for the
``cpu`` pseudo-device, which has no roofline figures); ``LengthDist.sample`` takes a ``random.Random``; an
open-loop ``Workload.concurrency`` is the load generator's in-flight cap (arrivals wait at the client, and their
latency clock starts when sent); ``ignore_eos=False`` is refused (EOS timing is not modelled).
"""

from __future__ import annotations

from pytest_roofline.errors import SimulationError as SimulationError
from pytest_roofline.model.serving.constants import ACTIVATION_BYTES as ACTIVATION_BYTES
from pytest_roofline.model.serving.constants import CONSTANT_SOURCES as CONSTANT_SOURCES
from pytest_roofline.model.serving.constants import KERNELS_PER_LAYER as KERNELS_PER_LAYER
from pytest_roofline.model.serving.constants import ServingConstants as ServingConstants
from pytest_roofline.model.serving.constants import default_constants as default_constants
from pytest_roofline.model.serving.cost import StepCost as StepCost
from pytest_roofline.model.serving.cost import step_cost as step_cost
from pytest_roofline.model.serving.engine import EngineConfig as EngineConfig
from pytest_roofline.model.serving.engine import kv_accounting as kv_accounting
from pytest_roofline.model.serving.point import ArrivalKind as ArrivalKind
from pytest_roofline.model.serving.point import LengthDist as LengthDist
from pytest_roofline.model.serving.point import Workload as Workload
from pytest_roofline.model.serving.point import arrival_times as _arrival_times
from pytest_roofline.model.serving.point import workload_for_point as workload_for_point
from pytest_roofline.model.serving.prediction import PointPrediction as PointPrediction
from pytest_roofline.model.serving.prediction import StepRecord as StepRecord
from pytest_roofline.model.serving.prediction import percentile as _percentile
from pytest_roofline.model.serving.prediction import weighted_percentile as _weighted_percentile
from pytest_roofline.model.serving.scheduler import Scheduler as Scheduler
from pytest_roofline.model.serving.scheduler_v0 import V0Scheduler as V0Scheduler
from pytest_roofline.model.serving.scheduler_v1 import V1Scheduler as V1Scheduler
from pytest_roofline.model.serving.simulator import _Sim as _Sim
from pytest_roofline.model.serving.simulator import client_send_delays_s as client_send_delays_s
from pytest_roofline.model.serving.simulator import simulate as simulate
from pytest_roofline.model.serving.simulator import simulate_sweep as simulate_sweep

__all__ = [
    "ArrivalKind", "LengthDist", "Workload", "EngineConfig", "ServingConstants", "StepCost", "step_cost",
    "PointPrediction", "simulate", "simulate_sweep", "client_send_delays_s", "default_constants", "workload_for_point",
    "kv_accounting", "SimulationError", "StepRecord", "CONSTANT_SOURCES", "KERNELS_PER_LAYER", "ACTIVATION_BYTES",
    "Scheduler", "V1Scheduler", "V0Scheduler",
    # private names the tests reach for (the simulator, its open-loop send times, its percentiles)
    "_Sim", "_arrival_times", "_percentile", "_weighted_percentile",
]
