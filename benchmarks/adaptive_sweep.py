"""How many requests the adaptive sweep spends to reach the verdicts a fixed sweep reaches.

    python benchmarks/adaptive_sweep.py            # (1) notebook replay + (2) recorded CPU-engine requests
    python benchmarks/adaptive_sweep.py --live     # + (3) cpu-tiny live on the CPU engine, adaptive vs fixed

(1) **The Day 3 notebook** (8 points × ≥ 3 min on an A100, ``predictions/day3.yaml``; its recorded table
``predictions/recorded/day3-2026-07-31.results.json``). Its per-request data were not kept, so each point's
requests are drawn (seeded) from distributions fitted to that point's recorded figures: TTFT and TPOT lognormal
through the recorded p50 and p99 (σ = ln(p99/p50) / z₀.₉₉, z₀.₉₉ = 2.3263), 1,024 output tokens, and a closed
loop of C clients each sending its next request when the last one ends — so the point's throughput comes out
as C × 1,024 / E2E, the notebook's own Little's-law figure. Every point runs (a) the fixed count the notebook
ran (10 × C requests: the cap) and (b) the adaptive rule (``measure/adaptive.py``) on the same draws, with the
decision targets ``measure/plan.py`` derives from day3.yaml. Printed per point: requests and minutes used, and
whether every target's verdict (inside / outside its band, or not decidable) equals the fixed run's at 95 %.

(2) **The CPU engine's own recorded requests** (``predictions/recorded/*.requests.jsonl``) through the same rule.

(3) **Live**: cpu-tiny's predictions on the CPU engine, ``sweep.adaptive: true`` against the fixed sweep.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_roofline.format.spec import load_spec  # noqa: E402
from pytest_roofline.measure.loadgen import RequestRecord  # noqa: E402
from pytest_roofline.measure.plan import PointPlan, plan_points  # noqa: E402
from pytest_roofline.measure.plan import stopping as adaptive  # noqa: E402

Z99 = 2.3263478740408408  # the standard normal 0.99 quantile
NOTEBOOK_MINUTES = 8 * 3.0  # the seed's plan: 8 points, >= 3 min each
CHUNKS = 64  # SSE chunks per request in the synthetic draws (16 tokens each: the token count is what matters)


def _lognormal(rng: np.random.Generator, p50: float, p99: float, n: int) -> np.ndarray:
    sigma = max(math.log(p99 / p50), 1e-9) / Z99
    return np.exp(rng.normal(math.log(p50), sigma, n))


def synthetic_closed_loop(concurrency: int, requests: int, ttft_ms: tuple[float, float],
                          tpot_ms: tuple[float, float], output_tokens: int, seed: int) -> list[RequestRecord]:
    """A closed loop of ``concurrency`` clients, ``requests`` in all, every request's TTFT and TPOT drawn from
    lognormals through the given (p50, p99); all clients start at t = 0 (the measure phase starts together)."""
    rng = np.random.default_rng(seed)
    ttft = _lognormal(rng, ttft_ms[0] / 1e3, ttft_ms[1] / 1e3, requests)
    tpot = _lognormal(rng, tpot_ms[0] / 1e3, tpot_ms[1] / 1e3, requests)
    free = [0.0] * concurrency  # when each client can send next
    out = []
    for i in range(requests):
        c = min(range(concurrency), key=free.__getitem__)
        sent = free[c]
        first = sent + ttft[i]
        end = first + tpot[i] * (output_tokens - 1)
        chunks = list(np.linspace(first, end, CHUNKS))
        out.append(RequestRecord(index=i, request_id=f"r{i}", warmup=False, input_len=1024,
                                 output_len=output_tokens, sent_s=sent, first_token_s=first, chunk_times_s=chunks,
                                 end_s=end, prompt_tokens=1024, completion_tokens=output_tokens, status="ok"))
        free[c] = end
    return out


def _verdict(d: adaptive.TargetDecision) -> str:
    return d.state if d.state in adaptive.DECIDED else "inconclusive"


def _verdicts(decisions: list[adaptive.TargetDecision]) -> dict[str, str]:
    """Per prediction and statistic: a target's verdict; a conjunction (a goodput's SLOs at one point) is one
    verdict: outside when any target is, inside when all are, else inconclusive."""
    out: dict[str, str] = {}
    conj: dict[str, list[str]] = {}
    for d in decisions:
        if d.target.conjunction:
            conj.setdefault(d.target.prediction_id, []).append(_verdict(d))
        else:
            out[f"{d.target.prediction_id}:{d.target.statistic}"] = _verdict(d)
    for pid, vs in conj.items():
        out[f"{pid}:SLO"] = ("outside" if "outside" in vs else "inside" if all(v == "inside" for v in vs)
                             else "inconclusive")
    return out


def _span_s(records: list[RequestRecord]) -> float:
    sent = [r.sent_s for r in records if r.sent_s is not None]
    ends = [r.end_s for r in records if r.end_s is not None]
    return (max(ends) - min(sent)) if sent and ends else 0.0


def compare_point(plan: PointPlan, records: list[RequestRecord], rule: adaptive.StoppingRule,
                  earlier: list[tuple[PointPlan, list[adaptive.TargetDecision]]] | None = None) -> dict:
    """Fixed (every record, one look at 95 %) against adaptive (the rule's looks, after dropping the targets the
    points run before it decide: ``adaptive.implied_by``) on the same records."""
    window = (min(r.sent_s or 0.0 for r in records), max(r.end_s or 0.0 for r in records))
    full = adaptive.evaluate(plan.targets, records, window, 0.95, len(records), rule)
    reduced, implied = adaptive.implied_by(plan, earlier or [])
    stop, used = adaptive.replay_point(replace(reduced, num_requests=len(records)), records, rule)
    decisions = list(stop.decisions) + implied  # an implied target carries the earlier point's verdict
    fixed_v, adapt_v = _verdicts(full), _verdicts(decisions)
    same = all(adapt_v.get(k) == v for k, v in fixed_v.items())
    return {"point": plan.id, "fixed_requests": len(records), "fixed_s": _span_s(records),
            "adaptive_requests": len(used), "adaptive_s": _span_s(used), "same_verdicts": same,
            "discarded": sum(1 for r in used if r.discarded),
            "targets": [(k, v, adapt_v.get(k, "-")) for k, v in fixed_v.items()], "decisions": decisions,
            "stopped": stop.stopped or ("no target left: stopped at the floor" if not reduced.targets else None)}


def notebook_replay(rule: adaptive.StoppingRule, seed: int = 0) -> list[dict]:
    spec = load_spec(REPO / "predictions" / "day3.yaml")
    rec = json.loads((REPO / "predictions" / "recorded" / "day3-2026-07-31.results.json").read_text())
    by_id = {p["id"]: p for p in rec["points"]}
    rows = []
    earlier: list[tuple[PointPlan, list[adaptive.TargetDecision]]] = []
    for plan in adaptive.adaptive_order(plan_points(spec, spec.predictions)):
        if plan.id == "batch1":
            continue
        cl = by_id[plan.id]["client"]
        records = synthetic_closed_loop(plan.concurrency or 1, by_id[plan.id]["num_requests"],
                                        (cl["ttft_ms"]["p50"], cl["ttft_ms"]["p99"]),
                                        (cl["tpot_ms"]["p50"], cl["tpot_ms"]["p99"]), plan.output_len,
                                        seed * 1000 + (plan.concurrency or 1))
        row = compare_point(plan, records, rule, earlier)
        earlier.append((plan, row["decisions"]))
        rows.append(row)
    return rows


def _records_from_jsonl(path: Path) -> list[RequestRecord]:
    out = []
    for line in path.read_text().splitlines():
        d = json.loads(line)
        fields = {k: d.get(k) for k in ("index", "request_id", "warmup", "input_len", "output_len", "scheduled_s",
                                         "sent_s", "first_token_s", "end_s", "prompt_tokens", "completion_tokens",
                                         "status", "error", "http_status")}
        fields["chunk_times_s"] = list(d.get("chunk_times_s") or [])
        out.append(RequestRecord(**{k: v for k, v in fields.items() if v is not None or k in ("error",)}))
    return out


def recorded_cpu(rule: adaptive.StoppingRule) -> list[dict]:
    rows = []
    for path in sorted((REPO / "predictions" / "recorded").glob("*.requests.jsonl")):
        stem, point_id = path.name.split(".")[0], path.name.split(".")[1]
        name = stem.rsplit("-2026", 1)[0]
        spec_path = REPO / "predictions" / f"{name}.yaml"
        if not spec_path.exists():
            continue
        spec = load_spec(spec_path)
        plan = next((p for p in plan_points(spec, spec.predictions) if p.id == point_id), None)
        records = [r for r in _records_from_jsonl(path) if not r.warmup]
        if plan is None or not records:
            continue
        row = compare_point(plan, records, rule)
        row["point"] = f"{name}:{point_id}"
        rows.append(row)
    return rows


def _print(rows: list[dict], title: str, budget_min: float | None = None) -> None:
    print(f"\n{title}")
    print(f"{'point':<28}{'fixed req':>10}{'adaptive':>10}{'discarded':>10}{'fixed min':>11}{'adapt min':>11}"
          "  same verdicts")
    for r in rows:
        print(f"{r['point']:<28}{r['fixed_requests']:>10}{r['adaptive_requests']:>10}{r['discarded']:>10}"
              f"{r['fixed_s'] / 60:>11.2f}{r['adaptive_s'] / 60:>11.2f}  {'yes' if r['same_verdicts'] else 'NO'}")
    fixed = sum(r["fixed_s"] for r in rows) / 60
    used = sum(r["adaptive_s"] for r in rows) / 60
    freq = sum(r["fixed_requests"] for r in rows)
    areq = sum(r["adaptive_requests"] for r in rows)
    disc = sum(r["discarded"] for r in rows)
    print(f"{'total':<28}{freq:>10}{areq:>10}{disc:>10}{fixed:>11.2f}{used:>11.2f}  "
          f"{'all' if all(r['same_verdicts'] for r in rows) else 'NOT all'}")
    print(f"adaptive / fixed: {used / fixed:.1%} of the minutes, {areq / freq:.1%} of the requests")
    if budget_min:
        print(f"adaptive / the notebook's {budget_min:g} GPU-minutes (8 points x 3 min): {used / budget_min:.1%} "
              f"(target <= 33.3%)")


def _print_targets(rows: list[dict]) -> None:
    for r in rows:
        print(f"  {r['point']}: {r['stopped'] or 'ran to the cap'}")
        for key, fixed, adapt in r["targets"]:
            print(f"      {key:<42} fixed {fixed:<13} adaptive {adapt}")


def _junit_outcomes(path: Path) -> dict[str, str]:
    import xml.etree.ElementTree as ET

    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        kids = {c.tag for c in case}
        outcome = ("failed" if kids & {"failure", "error"} else "skipped" if "skipped" in kids else "passed")
        skipped = case.find("skipped")
        if skipped is not None and "xfail" in (skipped.get("type", "") + skipped.get("message", "")).lower():
            outcome = "xfailed"
        out[case.get("name", "")] = outcome
    return out


def live_cpu_tiny(timeout_s: float) -> None:  # pragma: no cover - needs the CPU engine
    """cpu-tiny on the CPU engine twice, fixed and adaptive: measured requests, minutes, and every verdict."""
    import subprocess
    import tempfile

    runs = {}
    with tempfile.TemporaryDirectory(prefix="adaptive-live-") as tmpd:
        for adaptive_on in (False, True):
            t0 = time.monotonic()
            name = "adaptive" if adaptive_on else "fixed"
            text = (REPO / "predictions" / "cpu-tiny.yaml").read_text()
            text = text.replace("  warmup: 4\n", f"  warmup: 4\n  adaptive: {str(adaptive_on).lower()}\n")
            yaml_path = Path(tmpd) / f"cpu-tiny-{name}.yaml"
            yaml_path.write_text(text)
            out = Path(tmpd) / name
            junit = Path(tmpd) / f"{name}.xml"
            cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--gpu", "cpu", str(yaml_path),
                   "--roofline-out", str(out), f"--junitxml={junit}", "--no-roofline-progress"]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=REPO)
            wall = time.monotonic() - t0
            res = sorted(out.rglob("results.json"))
            points = json.loads(res[-1].read_text())["points"] if res else []
            per_point = {p["id"]: (p.get("client") or {}).get("completed", 0) for p in points}
            discarded = sum(int((p.get("adaptive") or {}).get("discarded") or 0) for p in points)
            settle = [float(x) for p in points if (x := (p.get("adaptive") or {}).get("abort_settle_s")) is not None]
            measured_s = sum(p.get("duration_s") or 0.0 for p in points)
            outcomes = _junit_outcomes(junit) if junit.exists() else {}
            runs[name] = (per_point, measured_s, outcomes)
            if not adaptive_on and res:  # the fixed run's own per-request files through the rule, as in (2)
                spec = load_spec(yaml_path)
                plans = {p.id: p for p in plan_points(spec, spec.predictions)}
                rows = []
                for f in sorted(res[-1].parent.glob("*.requests.jsonl")):
                    plan = plans.get(f.name.split(".")[0])
                    recs = [r for r in _records_from_jsonl(f) if not r.warmup]
                    if plan is not None and recs:
                        rows.append(compare_point(plan, recs, adaptive.StoppingRule()))
                if rows:
                    _print(rows, "(2b) this run's fixed cpu-tiny per-request files through the rule (no implications"
                                 " between points)")
                    _print_targets(rows)
            tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-300:]
            print(f"\n(3) live cpu-tiny, {name}: {sum(per_point.values())} measured requests"
                  + (f" (+{discarded} sent and discarded at the stops; the server showed none running "
                     f"{max(settle):.2f} s after the stop at most)" if discarded and settle else
                     f" (+{discarded} sent and discarded at the stops)" if discarded else "") + ", "
                  f"{measured_s:.1f} s of measurement windows, {wall:.0f} s wall (engine start included)")
            print("    " + "  ".join(f"{k}: {v}" for k, v in sorted(per_point.items(), key=lambda kv: kv[0])))
            print(f"    pytest: {tail}")
    if len(runs) == 2:
        (fp, fs, fo), (ap, as_, ao) = runs["fixed"], runs["adaptive"]
        same = fo == ao
        diff = {k: (fo.get(k), ao.get(k)) for k in set(fo) | set(ao) if fo.get(k) != ao.get(k)}
        print(f"(3) adaptive / fixed: {sum(ap.values())} / {sum(fp.values())} requests "
              f"({sum(ap.values()) / max(1, sum(fp.values())):.1%}), {as_:.1f} / {fs:.1f} s measured; "
              f"verdicts {'all equal' if same else 'differ: ' + str(diff)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--live", action="store_true", help="also run cpu-tiny live on the CPU engine (minutes)")
    ap.add_argument("--seeds", type=int, default=3, help="seeds of the notebook replay")
    ap.add_argument("--looks", type=int, default=adaptive.StoppingRule().max_looks, help="planned looks per point")
    ap.add_argument("-v", "--verbose", action="store_true", help="every target's verdicts")
    args = ap.parse_args()
    rule = adaptive.StoppingRule(max_looks=args.looks)
    shares, differing = [], []
    kinds: dict[str, int] = {}  # fixed verdict -> adaptive verdict, where they differ
    for seed in range(args.seeds):
        rows = notebook_replay(rule, seed)
        _print(rows, f"(1) Day 3 notebook, per-request draws from its per-point statistics (seed {seed})",
               NOTEBOOK_MINUTES)
        if args.verbose or seed == 0:
            _print_targets(rows)
        shares.append(sum(r["adaptive_s"] for r in rows) / 60 / NOTEBOOK_MINUTES)
        if not all(r["same_verdicts"] for r in rows):
            differing.append(seed)
        for r in rows:
            for _key, fixed, adapt in r["targets"]:
                if fixed != adapt:
                    kinds[f"{fixed} -> {adapt}"] = kinds.get(f"{fixed} -> {adapt}", 0) + 1
    if shares:
        within = sum(1 for x in shares if x <= 1 / 3)
        print(f"\n(1) over {len(shares)} seeds: the adaptive sweep took {min(shares):.1%} to {max(shares):.1%} of the "
              f"notebook's {NOTEBOOK_MINUTES:g} GPU-minutes, mean {sum(shares) / len(shares):.1%}, median "
              f"{sorted(shares)[len(shares) // 2]:.1%}; <= 1/3 on {within} of {len(shares)}; verdicts differing from "
              f"the fixed count's on seeds {differing or 'none'}")
        print("    where they differ (fixed at 95% -> adaptive): "
              + (", ".join(f"{k} x{v}" for k, v in sorted(kinds.items())) or "nowhere"))
    rows = recorded_cpu(rule)
    if rows:
        _print(rows, "(2) the CPU engine's recorded per-request runs")
        _print_targets(rows)
    if args.live:
        live_cpu_tiny(1200)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
