"""The engine runs what the file says, or the run says why not (issue 20, item 5), against the live CPU engine.

The session's shared tiny engine was started with predictions/cpu-tiny.yaml's ``cpu_kvcache_space: 1 GiB``
(``support.engine.cpu_tiny_engine_config``: ``kv_cache_space_gib=1``). Its own self-report (``/metrics``
``cache_config_info`` and its startup log) must agree with that file, and must be found to disagree with a file that
declares 2 GiB: the sweep is handed the running 1 GiB engine as the engine it started for the 2 GiB file (what
happened to the newcomer, whose 1.5 GiB was run as 2), and gives one error for the file naming the field, the
declared and the applied value, before any request is sent.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.engine import CPU_TINY

from pytest_roofline.errors import PointError
from pytest_roofline.format.spec import load_spec
from pytest_roofline.measure import sweep
from pytest_roofline.measure.engine import Engine, applied
from pytest_roofline.measure.sweep import engine_config_for

pytestmark = pytest.mark.slow

GIB = 1 << 30


def test_the_live_engine_reports_the_kv_pool_the_file_declares(tiny_engine: Engine) -> None:
    report = tiny_engine.report()
    cc = report["sources"]["metrics"]["cache_config"]
    # 1 GiB, the pool cpu-tiny.yaml declares and the engine was started with (VLLM_CPU_KVCACHE_SPACE=1)
    assert int(cc["kv_cache_memory_bytes"]) == 1 * GIB
    assert applied.applied_differences(load_spec(CPU_TINY).engine, report) == []


def test_a_file_whose_kv_pool_the_engine_did_not_take_is_one_error_naming_the_field(
        tiny_engine: Engine, tmp_path: Path) -> None:
    text = CPU_TINY.read_text(encoding="utf-8")
    assert "cpu_kvcache_space: 1 GiB" in text
    two = tmp_path / "cpu-tiny-2gib.yaml"
    two.write_text(text.replace("cpu_kvcache_space: 1 GiB", "cpu_kvcache_space: 2 GiB", 1), encoding="utf-8")
    spec = load_spec(two)
    m = sweep.Measurements(mode="engine", gpu="cpu", endpoint=None, endpoint_key_env=None,
                           out_dir=tmp_path / "out", reanchor=False, plans={})
    # the engine "started" for this file is the running 1 GiB one: it did not apply the file's 2 GiB
    m.targets[engine_config_for(spec, device="cpu").key()] = tiny_engine
    with pytest.raises(PointError) as exc:
        m.for_spec(spec)
    msg = str(exc.value)
    assert ("engine.cpu_kvcache_space: declared 2 GiB (2,147,483,648 B), applied 1 GiB (1,073,741,824 B)"
            in msg), msg
    assert msg.count("declared") == 1  # one difference, one error for the file
    assert not (tmp_path / "out" / "cpu-tiny-2gib" / "results.json").exists()  # nothing was measured
    tiny_engine.check_alive()  # the shared engine is untouched
