"""The model layer's structure (issue 19): one scheduler policy a module behind one signature, the config.json
reader as one table row per model_type, and the front doors that keep every old import working."""

from __future__ import annotations

import dataclasses
import inspect

from pytest_roofline.model import architecture, hf_config
from pytest_roofline.model import serving as sv
from pytest_roofline.model.serving import scheduler, scheduler_v0, scheduler_v1, simulator
from pytest_roofline.model.setup import build_setup


def tiny_setup():
    return build_setup(hardware_ref="cpu", model_ref="roofline-tiny",
                       engine={"name": "vllm", "version": "0.32.0", "cpu_kvcache_space": 2**30},
                       workload={"input_len": 128, "output_len": 64})


def test_each_scheduler_policy_has_its_own_module_and_the_one_signature():
    assert sv.V1Scheduler.__module__ == scheduler_v1.__name__
    assert sv.V0Scheduler.__module__ == scheduler_v0.__name__
    want = inspect.signature(scheduler.Scheduler.schedule)
    for policy in (sv.V1Scheduler, sv.V0Scheduler):
        assert inspect.signature(policy.schedule) == want


def test_the_simulator_takes_the_policy_the_engine_config_names():
    setup = tiny_setup()
    engine = sv.EngineConfig.from_setup(setup)
    work = sv.workload_for_point(setup, concurrency=2, num_requests=2)
    consts = sv.default_constants(setup)
    # a V1 engine runs V1's scheduler with chunked prefill on or off (vllm/v1/core/sched/scheduler.py has both
    # branches); only the V0 engine runs the V0 policy
    for kind, chunked, policy in (("v1", True, sv.V1Scheduler), ("v1", False, sv.V1Scheduler),
                                  ("v0", False, sv.V0Scheduler)):
        eng = dataclasses.replace(engine, chunked_prefill=chunked, engine_kind=kind)
        assert isinstance(simulator._Sim(setup, work, eng, consts, True).scheduler, policy)


def test_every_supported_model_type_is_one_row_of_the_table():
    assert architecture.SUPPORTED_MODEL_TYPES == tuple(hf_config.FAMILIES)
    assert set(hf_config._ARCHITECTURE_TO_TYPE.values()) <= set(hf_config.FAMILIES)
    assert [t for t, f in hf_config.FAMILIES.items() if f.text_config] == ["gemma3"]
