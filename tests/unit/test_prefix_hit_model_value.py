"""``prefix_cache_hit_rate`` has a serving-model value (trial s23b M3): the prefix cache block by block
(model/serving/kv_pool.py), the tokens each request found cached when admitted ÷ its prompt tokens. Known answers on
the CPU engine, whose KV blocks are 128 tokens: 384-token prompts sharing 256 tokens (two whole blocks), the
warm-up having computed them: every request finds 256 of 384, 2/3; sharing 64 tokens (half a block): none."""

from __future__ import annotations

import pytest

from pytest_roofline import scoring
from pytest_roofline.format.spec import loads_spec

FILE = ("hardware: cpu\nmodel: roofline-tiny\nengine: {name: vllm, version: \"0.32.0\", cpu_kvcache_space: 1 GiB}\n"
        "workload: {input_len: 384, output_len: 16, shared_prefix_len: %d}\nsweep: {concurrency: [4], warmup: 4}\n"
        "predictions:\n  - {id: hits, quantity: prefix_cache_hit_rate, at: {concurrency: 4}, predicted: model}\n")


@pytest.mark.parametrize(("shared", "rate"), [(256, 2 / 3), (64, 0.0)])
def test_the_hit_rate_has_the_pools_value(shared, rate):
    spec = loads_spec(FILE % shared, file="hits.yaml")
    [pred] = spec.predictions
    v = scoring.score(spec, pred, "math")
    assert v.serving_value == pytest.approx(rate, abs=1e-12)


def test_simulate_prints_the_hit_share_where_a_point_has_one(tmp_path, capsys):
    """``roofline predict --simulate``'s table has a ``hit %`` column where a point finds prompt tokens cached
    (trial s23b: the value was in --json alone), and none where no point does (the legend names it only then)."""
    from pytest_roofline.cli import main
    for shared, shown in ((256, "66.7"), (64, None)):
        f = tmp_path / f"hits{shared}.yaml"
        f.write_text(FILE % shared)
        assert main(["predict", "--simulate", str(f)]) == 0
        out = capsys.readouterr().out
        header = next(line for line in out.splitlines() if "dominant term" in line)
        row = next(line for line in out.splitlines() if line.lstrip().startswith("4 "))
        if shown:
            assert header.split()[-3:] == ["%", "dominant", "term"] and "hit %" in header
            assert row.split()[-3] == shown
            assert "no band for run, KV %, preempt, queue ms, hit %:" in out and "the prefix-cache hit rate" in out
        else:
            assert "hit %" not in out and "prefix-cache hit rate" not in out


def test_the_flags_shared_prefix_is_simulated(capsys):
    """``--set workload.shared_prefix_len=256`` without a file was accepted and not simulated (trial s24c H3): the
    same TTFT and no hit % column as without it. Now it is read as a file's workload is."""
    from pytest_roofline.cli import main
    base = ["predict", "--simulate", "--hardware", "cpu", "--model", "roofline-tiny", "--set",
            "engine.cpu_kvcache_space=1GiB", "--input-len", "384", "--output-len", "16", "--concurrency", "4"]
    assert main(base) == 0
    plain = capsys.readouterr().out
    assert main([*base, "--set", "workload.shared_prefix_len=256"]) == 0
    shared = capsys.readouterr().out
    assert "hit %" not in plain and "hit %" in shared
    ttft = [float(next(ln for ln in out.splitlines() if ln.lstrip().startswith("4 ")).split()[3])
            for out in (plain, shared)]
    assert ttft[1] < ttft[0]  # two of three prompt blocks found cached: a shorter prefill
