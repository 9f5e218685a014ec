"""How often drift cries wolf, and how often it catches a real change (issue 21). Prints the figures; asserts nothing.

Input: real CPU-engine runs of ``benchmarks/drift_cpu.yaml`` (two closed-loop points, C=4 and C=8, 8 measured
predictions: output throughput, TTFT/TPOT/E2E p50), some with ``max_num_seqs: 4`` and some with ``max_num_seqs: 2``
(the change the review made, 4 → 2). Every run is a fresh engine start, so pairs of runs of one configuration hold
the real run-to-run variation (engine start, a shared 2-core machine's load), not only the within-run sampling
noise. They are kept compactly in ``benchmarks/data/``: each prediction's stored value with its 95 % interval (as
the history stores it) and each point's per-request TTFT, TPOT and E2E samples. Six data files, each printed:
``drift-cpu-runs-idle.json`` (2026-12-05 09:24-09:32 UTC: 12 runs at 48x on the machine with no other job
running, the engine in pytest's session: every point 0.99-1.00 of C), ``drift-cpu-runs-idle2.json`` (the same,
09:54-10:02 UTC), ``drift-cpu-runs-held.json`` (fourth
session, earlier that day: 12 runs at 48x made after the engine was moved into pytest's session, so the load
generator holds its concurrency: every point 0.99-1.00 of C; see measure.engine's docstring),
``drift-cpu-runs-48x.json`` (third session: 12 runs at ``requests_per_point: 48x``, the file's setting now, with
the load average and the other processes' CPU share recorded; a starved load generator: 0.23-0.89 of C),
``drift-cpu-runs-load.json`` (second session: 12 runs at 12x with the load average) and ``drift-cpu-runs.json``
(the first 11, at 12x). The three older files are the record of a starved client; only the first three are what the
plugin measures now.

**A longer history** (``drift-cpu-runs-long.json``, 2026-12-06 23:24-23:46 UTC: 16 runs per configuration, read
only with ``--data``): ``--depths 1,3,5,8,11,15 --max-histories 40`` gives the figures at up to 15 earlier nights
(40 choices of earlier nights drawn per tonight where there are more, the same draws for every rule);
``--baseline median`` judges against ``median:N``; ``--spread-runs N`` reads the nights' spread from the latest N
(shipped 5). On that set 4 of the 32 runs moved in every figure at once (three consecutive runs ~1.7x slower, the
machine; one at C=8 only), and false drift is 4.7-9.7 % and detection 47-66 % at every depth: the figures and the
reading are in benchmarks/RESULTS-drift.md ("A longer history").

**The shipped rule measures the nights' spread from their mean** (the 95 % prediction interval's centre; since
2026-12-05's afternoon; ``--center baseline`` prints the rule before, which measured it from the baseline: on the
three held sets 4.2 / 8.8 / 3.3 % false drift and 87.5 / 66.0 / 58.9 % detection, against the figures below).

**Measured on the idle machine's runs** (``drift-cpu-runs-idle.json``; run-to-run sd of a prediction's log value
0.02-0.06): with three earlier nights, false drift 3.5 % (34/960; goal <= 5 %) and detection of 4 -> 2 87.4 %
(734/840; goal >= 90 %: missed: six of the seven affected predictions 120/120, TPOT p50 at C=4, a 13 % move of
3 sd, 14/120; a test that knew the noise exactly would reach 98 %); every figure x1.5 caught 98.5 %; with one
earlier night 8.8 % / 94.4 % by the within-run intervals alone (since 2026-12-06 the shipped rule calls nothing
drifted before three earlier nights: 0 % / 0 %, every such move ``uncertain``); with five 5.2 % / 86.9 %;
``--spread prediction`` 4.8 % / 90.2 % (within the
false-drift goal here, but 12.9 % false drift on the second idle set and 5.4 % on the held runs: not shipped).

**Measured on the second idle set** (``drift-cpu-runs-idle2.json``, half an hour later; run-to-run sd 0.09-0.18,
the set's last runs 14-31 % from their configuration's median: the machine slowed during the set): false drift
8.6 % (83/960: over the 5 % goal) and detection 68.3 % (574/840). The rule's 5 % assumes nights that vary
independently around one level; a machine whose speed drifts within the nights breaks that, and the figure
moves with it: 2.8 %, 3.5 % and 8.6 % over the three held sets (5.0 % and 72.4 % detection together).

**Measured on another machine** (``drift-cpu-runs-idle3.json``: 2026-12-05 13:28-13:41 UTC, the 12 runs the same
way on the replacement 2-core machine, AMD EPYC, nothing else running, every point 1.00 of C; run-to-run sd 0.02-0.09):
false drift 1.1 % (11/960) and detection 84.4 % (709/840: missed; TPOT p50 at C=8, an 11 % move of 2.8 sd, 10/120;
throughput at C=4 99/120); measured from the baseline, 1.8 % / 83.1 %. The four held sets together: 4.0 % false
drift (155/3,840) and 75.4 % detection (2,533/3,360).

**Measured on the held runs** (``drift-cpu-runs-held.json``; run-to-run sd of a prediction's log value 0.05-0.16,
against 0.09-0.70 in the starved 48x runs): with three earlier nights, false drift 2.8 % (27/960; goal <= 5 %) and
detection of 4 -> 2 61.4 % (516/840; goal >= 90 %: missed, the rest ``uncertain``; a test that knew the noise
exactly would reach 87 %); with one earlier night 40.6 % / 95.6 % by the intervals alone (they do not hold the
night-to-night noise: the shipped rule calls nothing drifted before three earlier nights); with five, 4.2 % / 77.8 %.
A change of x2 in every figure is caught
92.6 % of the time with three nights. The what-if ``--spread prediction`` gives 5.4 % / 80.8 % on these runs and
5.3 % false drift on the starved 48x runs, both over the 5 % goal, so it is not shipped.

Figures:

1. **Real runs, identical configuration**: each run as "tonight" against every choice of 1 (and of 3) other runs
   of the same ``max_num_seqs`` as the earlier nights (the previous-night baseline; with 3 earlier nights the
   nights' own spread joins the test), every measured prediction: the share called ``drifted`` (goal ≤ 5 %), and
   ``uncertain``.
2. **Real runs, max_num_seqs 4 → 2**: each 2-run as tonight against every choice of 1 (3, 5) 4-runs, at the
   predictions the change affects, the share called ``drifted`` (goal ≥ 90 %); at the others, the share called
   ``drifted`` (a false drift). *Affected* is decided from the mechanism and the runs' own medians, never from
   drift's answers: ``max_num_seqs`` caps how many requests run at once, so it can move only a point whose
   concurrency is above the new cap (2; both points here, C=4 and C=8, are), and of those only the predictions
   whose median over the 2-runs differs from the median over the 4-runs by more than the 10 % threshold count
   (a move drift is not asked to flag is no miss). Each affected prediction's change is also given in units of
   the run-to-run noise, with the best detection any test at 5 % false alarms could reach against it.
   Each figure is given with the stored intervals alone and with the rank test on per-request samples (the
   samples are the points' requests in the data file, sketched as the history now stores them).
Each run's distance from its configuration's median is printed beside the machine's load average during it
(recorded with the runs from the second session on) and the share of the machine's CPU that other processes used
(third session on), with their rank correlations.

3. **A change of known size on the machine's real run-to-run noise** (``scaled``): within one configuration,
   each real run as tonight with every stored value, interval and per-request sample multiplied by a factor
   (×1.1, 1.25, 1.5, 2, 3, 5; a throughput is multiplied too, so it rises: drift is two-sided), against every
   choice of 3 (and 5) of the other real runs of that configuration as the earlier nights: the share of
   predictions called ``drifted`` per factor (×1 is the identical-configuration false drift), the smallest factor
   caught ≥ 90 % of the time, and the best any test could do against that noise. The change is exact and known;
   the noise it has to be told from is the real one between engine starts. A value of 0 (a TPOT p50 where every
   token came in one burst) stays 0 at every factor: no test can see it move.

4. **Resampled nights** (within-run noise only): K pairs of nights drawn with replacement from one run's requests,
   p50s with their order-statistic intervals: the false-drift share; and the same with every sample 1.5× (a known
   change): the detection share.

For contrast each figure is also given for the old rule (beyond the 10 % threshold alone).

**The held rule** (issue 21, fifth pass; the shipped drift): a closed-loop point that held less than 90 % of its
concurrency in flight (``measure.stats.held``: ``held_in_flight`` from the moment C were first in flight to the
last measured send) measured a lower load than its ``at:`` says. Drift calls tonight's value at such a point
``uncertain`` and skips earlier nights whose value was at one, as baselines and for the nights' spread. A data
file's runs carry each point's held share (``"held": {"closed-c4": 0.61, ...}``, held_in_flight / C, computed
from the runs' requests files: ``--held RUN_DIR ...`` adds it to a file recorded before it was kept, ``--record``
writes it); figures 1 to 3 are printed without the rule (every value read as held, as a store written before it
was kept) and, for a file with held figures, WITH it, where a prediction-night with no held earlier night is
``new`` and counted as such. The 90 % is the flag's (``HELD_SHARE``), not fitted to these runs. Measured on the
48x runs: none of their 24 points held 90 % (0.23-0.89 of C), so with the rule every prediction-night is new:
false drift 0 of 960, detection 0 of 840 (was 5.7 % and 19.8 %): the rule says these runs compare nothing, which is
what they are. A run's mean held share does not track its distance from its configuration's median (Spearman
-0.13 over the 12 runs).

**What-if nights' spreads** (not the shipped rule; every figure above is then printed for the what-if):
``--spread prediction`` pools the variance of the nights' log values over the values of the same prediction id
and quantity at its other points (here C=4 and C=8), df = sum(n_i - 1), t at that df; ``--spread quantity`` pools
over every value of the quantity in the run (the same groups as ``prediction`` in drift_cpu.yaml, which has one
prediction per quantity); ``--spread run`` over every value in the run; ``--spread none`` drops the nights' spread
(the ceiling the other tests leave). ``--scale relative`` pools each value's nights divided by their mean instead
of their logs; ``--center mean`` measures tonight's distance from the nights' mean (the prediction interval's own
centre) instead of from the baseline. A value with no sibling (or a value <= 0, which has no log) keeps the
shipped rule. Measured on the three data files (issue 21, fourth pass), with 3 earlier nights, false drift /
detection of 4 -> 2: shipped 5.7 / 19.8 %, 4.7 / 18.5 %, 3.1 / 20.9 %; ``prediction`` 6.8 / 20.1 %, 5.4 / 23.0 %,
3.0 / 16.6 %; ``run`` 10.2 / 29.8 %, 10.3 / 29.4 %, 6.7 / 19.4 %; ``prediction --scale relative`` 7.2 / 27.1 %,
5.1 / 29.4 %, 4.4 / 23.4 %: none keeps false drift <= 5 % on every set, so the shipped rule stays.
``--spread moderated`` (2026-12-06;
benchmarks/moderated_spread.py) keeps each value's own log variance but moderates it toward the run's other
values by Smyth's (2004) empirical Bayes (the prior's degrees of freedom estimated from how much the values'
spreads differ, so no constant is tuned): on the four held sets with three earlier nights, detection 86.8 %
(2,916/3,360; 90.2 / 81.1 / 84.3 / 91.5 % on idle / idle2 / held / idle3) against the shipped 75.4 %, but false
drift 8.6 % (332/3,840; 5.0 / 14.9 / 9.2 / 5.5 %) against 4.0 %: not shipped either. The points
of one prediction do not share one noise level (within the 48x runs with max_num_seqs 4 the sd of the log TTFT
p50 is 0.99 at C=4 and 0.32 at C=8, E2E 0.22 and 0.45), and a run that is slow is slow at both points (their
log values correlate +0.55 to +0.81 across the runs of either configuration for throughput and E2E), so
sum(n_i - 1) overstates what the nights know.

``--spread factor`` (2026-12-06; benchmarks/factor_spread.py) takes the common mood out before pooling: each
night's signed log values (a throughput x -1) are a night factor per point (the median of the point's values;
``--factor-groups night``: one over all 8) plus each value's residual; a value beyond 10 % (intervals / rank test
apart) drifts when its residual is outside the residuals' spread (Smyth-moderated over the run's values;
``--factor-residual pooled``: one pooled variance) OR its point's factor is outside the earlier nights' factors'
own spread (n - 1 df), each test at ``--factor-level`` 0.975 (Bonferroni). Residual check (6 runs per
configuration, held sets): one factor over the night leaves residuals as correlated as the raw values (mean |r|
0.52-0.96 against 0.38 for independent values; the C=4 values load 2-4x more on the mood than C=8's); one per
point brings them to 0.35-0.69. The rule was fixed before its figures were computed (pre-registered: per point,
moderated, 0.975). With three earlier nights, false drift / detection on idle / idle2 / held / idle3: pre-registered
2.9 / 8.5 / 4.1 / 1.9 % and 90.2 / 69.3 / 58.5 / 85.1 % (pooled 4.3 %, 167/3,840; 75.8 %, 2,546/3,360) against the
shipped 4.0 % / 75.4 %: TPOT p50 (moving against the mood) is caught far more often (5 -> 80 of 120 on the held
runs), but E2E and throughput, which move with the mood, fall back on the factor's 2-df test at 97.5 % and are
caught less; x2 everywhere 82.6 % against 93.0 %. Each test at 0.95: 5.0 / 12.0 / 7.4 / 3.0 %, 85.0 % detection
(pooled 6.8 % false); pooled residual variance: 2.7 / 7.2 / 3.8 / 1.8 %, 75.5 %; one factor per night: 3.6 / 12.3 /
2.8 / 3.3 %, 77.7 %. None keeps false drift <= 5 % on every set (idle2, whose machine slowed within the set, is
over in all), and the pre-registered one detects no more than the shipped rule: not shipped.

Record the runs (about a minute each, one engine at a time), interleaving the two configurations::

    for i in 1 2 3 4 5 6; do
      flock /tmp/roofline-engine.lock pytest --gpu cpu benchmarks/drift_cpu.yaml --roofline-out runs/r4-$i -q
      # and the same file with max_num_seqs: 2 into runs/r2-$i
    done
    python benchmarks/drift_false_alarms.py --record runs/r4-* runs/r2-*   # writes the first data file

A run folder may also hold ``loadavg.txt`` (lines of ``<unix s> <contents of /proc/loadavg>``, polled every 2 s
while the run went), ``cpu.txt`` (``before|after <unix s> <the cpu line of /proc/stat>``) and ``times.txt``
(bash's ``times`` after the run): the run's load average and the other processes' CPU share are then kept.

``drift-cpu-runs-probe.json`` (2026-12-07, not in the default run: ``--data`` it) was recorded by the same loop,
8 nights a configuration, with one busy loop (``python3 -c "while True: pass"``) started before and stopped after
the run on nights 03 and 07 of each (a ``cotenant.txt`` in the run folder, kept as the run's ``cotenant``); its values
keep their host probe (``host_probe_gflop_per_s``: measure/probe.py), which drift's machine rule reads
(history/_machine.py; ``--machine 20%`` turns the rule on, as ``--roofline-drift-machine 20%`` does).
``drift-cpu-runs-probe-quiet.json``: 12 nights
the same way with no co-tenant.

Then ``python benchmarks/drift_false_alarms.py`` prints the figures from the data files. The 48x file's held
figures were added with ``python benchmarks/drift_false_alarms.py --held <the run folders>`` (the folders of
``--record``; each holds ``*/results.json`` and its points' ``*.requests.jsonl``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
from factor_spread import factor_outside, residual_correlations  # the what-if --spread factor
from moderated_spread import fit_variance_prior, moderated_variance  # the what-if --spread moderated

import pytest_roofline.history._drift as _drift
from pytest_roofline.history import DriftPolicy, DriftStatus, RunSummary, SetupKey, StoredValue, drift_for, stored_value
from pytest_roofline.history._machine import value_probe
from pytest_roofline.history._samples import per_request_metric, sketch
from pytest_roofline.measure.loadgen import RequestRecord
from pytest_roofline.measure.stats import HELD_SHARE, held_in_flight
from pytest_roofline.measure.stats.intervals import percentile_interval, t_quantile

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "drift-cpu-runs.json"
#: the held runs at 48x (fourth session), the runs at 48x with the other processes' CPU share (third session), the
#: runs at 12x with their load average (second session), then the first session's runs (12x); --record writes the
#: first
DATA_FILES = (HERE / "data" / "drift-cpu-runs-idle.json", HERE / "data" / "drift-cpu-runs-idle2.json",
              HERE / "data" / "drift-cpu-runs-held.json", HERE / "data" / "drift-cpu-runs-idle3.json",
              HERE / "data" / "drift-cpu-runs-48x.json",
              HERE / "data" / "drift-cpu-runs-load.json", DATA)
SETUP = SetupKey("cpu", "roofline-tiny", "0.32.0")
THRESHOLD = "10%"


# --------------------------------------------------------------------------- recording


def _samples(requests_file: Path) -> dict[str, list[float]]:
    ttft, tpot, e2e = [], [], []
    for line in requests_file.read_text().splitlines():
        r = json.loads(line) if line.strip() else None
        if not r or r.get("warmup") or r.get("status") != "ok" or r.get("first_token_s") is None:
            continue
        ttft.append(r["first_token_s"] - r["sent_s"])
        e2e.append(r["end_s"] - r["sent_s"])
        n = int(r.get("completion_tokens") or 0)
        if n > 1:
            tpot.append((r["end_s"] - r["first_token_s"]) / (n - 1))
    def r6(xs: list[float]) -> list[float]:  # 6 significant digits, as the history keeps a sample (a µs of 1 s)
        return [float(f"{x:.6g}") for x in xs]
    return {"ttft_s": r6(ttft), "tpot_s": r6(tpot), "e2e_s": r6(e2e)}


def _held(requests_file: Path, concurrency: int) -> float | None:
    """The point's held figure as a share of its concurrency: :func:`held_in_flight` (the time-averaged number in
    flight from the moment the count first reached C to the last measured send) over C, from the requests file's
    records (their sent_s, end_s, warmup and status), 3 decimals; None when the count never reached C."""
    records = []
    for i, line in enumerate(requests_file.read_text().splitlines()):
        r = json.loads(line) if line.strip() else None
        if r:
            records.append(RequestRecord(index=i, request_id=str(r.get("request_id") or i),
                                         warmup=bool(r.get("warmup")), input_len=0, output_len=0,
                                         sent_s=r.get("sent_s"), end_s=r.get("end_s"),
                                         status=r.get("status") or "error"))
    held = held_in_flight(records, concurrency)
    return None if held is None else round(held / concurrency, 3)


def _held_of(results: Path, data: dict[str, Any]) -> dict[str, float | None]:
    """Each closed-loop point's held share (:func:`_held`), by point id."""
    return {p["id"]: _held(results.parent / p["requests_file"], int(p["concurrency"])) for p in data["points"]
            if p.get("requests_file") and p.get("mode", "closed") == "closed" and p.get("concurrency")}


def add_held(dirs: list[Path], out: Path) -> None:
    """Add each run's points' held shares (``"held": {"closed-c4": 0.61, ...}``) to the data file ``out``, from
    the run folders it was recorded from (matched by folder name): for runs recorded before held was kept."""
    doc = json.loads(out.read_text())
    by_name = {d.name: d for d in dirs}
    done = 0
    for run in doc["runs"]:
        d = by_name.get(run["name"])
        if d is None:
            continue
        (results,) = d.glob("*/results.json")
        run["held"] = _held_of(results, json.loads(results.read_text()))
        done += 1
    if "held:" not in doc.get("about", ""):
        doc["about"] = doc.get("about", "") + ("; held: each closed-loop point's held_in_flight over its concurrency "
                                               "(measure/stats/held.py), added from the runs' requests files")
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"added held to {done} of {len(doc['runs'])} runs in {out.name}")


def record(dirs: list[Path], out: Path) -> None:
    from pytest_roofline.format.spec import load_spec
    from pytest_roofline.measure.results import load_results
    from pytest_roofline.report.scorecard import score_spec

    runs = []
    for d in sorted(dirs):
        (results,) = d.glob("*/results.json")
        data = load_results(results)
        argv = [str(a) for a in ((data.get("setup") or {}).get("engine") or {}).get("argv") or []]
        seqs = int(argv[argv.index("--max-num-seqs") + 1]) if "--max-num-seqs" in argv else 0
        spec = load_spec(HERE / "drift_cpu.yaml")
        values = []
        for v in score_spec(spec, data, source=str(results.name)):
            sv = stored_value(v.to_dict(), file="drift_cpu.yaml")
            values.append({k: getattr(sv, k) for k in ("key", "prediction_id", "quantity", "dimension", "unit",
                                                       "measured", "measured_lo", "measured_hi", "interval_method",
                                                       "interval_level")} | {"at": sv.at}
                          | ({"host_probe_gflop_per_s": probe}
                             if (probe := value_probe(data, [str(x) for x in v.measured_points])) is not None else {}))
        points = {p["id"]: _samples(results.parent / p["requests_file"]) for p in data["points"]
                  if p.get("requests_file")}
        run = {"name": d.name, "max_num_seqs": seqs, "created_at": data.get("created_at"),
               "requests_per_point": {p["id"]: p.get("num_requests") for p in data["points"]},
               "held": _held_of(results, data), "values": values, "requests": points}
        load = _load_during(d / "loadavg.txt")
        if load is not None:
            run["loadavg_1min"] = load
        other = _other_cpu_share(d / "cpu.txt", d / "times.txt")
        if other is not None:
            run["other_cpu_share"] = other
        if (d / "cotenant.txt").is_file():  # a co-tenant the recording loop ran beside the whole run, on purpose
            run["cotenant"] = (d / "cotenant.txt").read_text().strip()
        runs.append(run)
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"about": "benchmarks/drift_false_alarms.py: real CPU-engine runs of "
                                        "benchmarks/drift_cpu.yaml, one engine start each; loadavg_1min: the "
                                        "machine's 1-minute load average polled every 2 s during the run "
                                        "(mean, max; 2 cores); other_cpu_share: the share of the machine's "
                                        "CPU time that processes other than the run's own used during it; "
                                        "requests_per_point: the sweep's; host_probe_gflop_per_s (a value's): the "
                                        "slowest host probe of its points (measure/probe.py; runs recorded from "
                                        "2026-12-07); cotenant: a busy loop the recording ran beside the whole run; "
                                        "held: each closed-loop point's "
                                        "held_in_flight over its concurrency (measure/stats/held.py)",
                               "runs": runs},
                              indent=1) + "\n")
    print(f"wrote {out} ({len(runs)} runs)")


def _other_cpu_share(stat: Path, times: Path) -> float | None:
    """The share of the machine's CPU time (all cores, busy or idle) that processes other than the run's own
    (pytest, its load generator and the engine it started) used while the run went: ``cpu.txt`` holds the
    ``/proc/stat`` ``cpu`` line before and after the run (``before|after <unix s> cpu <user> <nice> <system>
    <idle> <iowait> <irq> <softirq> <steal> ...``, in clock ticks), ``times.txt`` bash's ``times`` after it
    (its second line: the CPU time of the shell's waited-for children, i.e. the run's process tree)."""
    if not stat.is_file() or not times.is_file():
        return None
    rows = {line.split()[0]: [float(x) for x in line.split()[3:]] for line in stat.read_text().splitlines()
            if line.startswith(("before", "after"))}
    lines = times.read_text().splitlines()
    if set(rows) != {"before", "after"} or len(lines) < 2:
        return None
    tick = float(os.sysconf("SC_CLK_TCK"))
    delta = [a - b for a, b in zip(rows["after"], rows["before"], strict=False)]
    total_s = sum(delta[:8]) / tick  # user nice system idle iowait irq softirq steal (guest is within user)
    busy_s = (total_s - (delta[3] + delta[4]) / tick)

    def secs(text: str) -> float:
        m, s = text.rstrip("s").split("m")
        return 60 * float(m) + float(s)
    ours_s = sum(secs(x) for x in lines[1].split())
    return round(max(0.0, busy_s - ours_s) / total_s, 3) if total_s > 0 else None


def _load_during(polls: Path) -> dict[str, float] | None:
    """The 1-minute load average over a run, from ``loadavg.txt`` lines (``<unix s> <1min> <5min> ...``) written
    every 2 s while it ran (see the recording loop above): mean and max."""
    if not polls.is_file():
        return None
    xs = [float(line.split()[1]) for line in polls.read_text().splitlines() if len(line.split()) > 1]
    return {"mean": round(statistics.fmean(xs), 2), "max": max(xs)} if xs else None


# --------------------------------------------------------------------------- figures


def _value(d: dict[str, Any]) -> StoredValue:
    return StoredValue(key=d["key"], prediction_id=d["prediction_id"], file="drift_cpu.yaml", quantity=d["quantity"],
                       dimension=d["dimension"], status="pass", mode="measured", at=dict(d["at"]), unit=d["unit"],
                       measured=d["measured"], measured_lo=d["measured_lo"], measured_hi=d["measured_hi"],
                       interval_method=d["interval_method"], interval_level=d["interval_level"],
                       predicted_text="ink", definition_hash="same",
                       host_probe_gflop_per_s=d.get("host_probe_gflop_per_s"))


def _night(i: int, values: list[StoredValue]) -> RunSummary:
    return RunSummary(run_id=f"20261204T{i:06d}Z-bench-000000", setup=SETUP, started_at=f"2026-12-04T00:00:{i:02d}Z",
                      mode="engine", values=tuple(values))


#: what-if nights' spread rules (``--spread``): ``nights`` is the shipped rule (each value's own nights, raw scale,
#: t with n - 1 df); ``prediction`` pools the variance of the nights' log values over the values of the same
#: prediction id and quantity at its other points (C=4 and C=8 here), df = sum(n_i - 1); ``quantity`` pools it over
#: every value of the same quantity in the run. Both keep the shipped rule for a value with no sibling that has 2
#: or more positive nights, or a value (now or baseline) <= 0, which has no log.
SPREADS = ("nights", "prediction", "quantity", "run", "moderated", "factor", "none")
SPREAD = "nights"
#: ``--spread factor`` (benchmarks/factor_spread.py): one night factor per point (``point``) or per night
#: (``night``), the residuals' variance moderated (Smyth) or pooled over the run's values, each test at this level
FACTOR_GROUPS = "point"
FACTOR_RESIDUAL = "moderated"
FACTOR_LEVEL = 0.975
#: the scale the what-if pools on: ``log`` (sd of log values) or ``relative`` (each value's nights' sd / their mean)
SCALE = "log"
#: what the nights' spread is measured from: ``mean`` (the shipped rule: the prediction interval's own centre,
#: |tonight - the mean of the nights| on the rule's scale) or ``baseline`` (the rule before: |tonight - baseline|)
CENTER = "mean"
#: ``--machine 20%``: drift's machine rule on (``--roofline-drift-machine``, history/_machine.py): a night whose host
#: probe is further than this from the other nights' is not judged; "" (the shipped default) judges every night
MACHINE = ""


def _base_id(v: StoredValue) -> str:
    return v.prediction_id.split("[", 1)[0]


def _pooled_log_spread(v: StoredValue, now: list[StoredValue], history: list[list[StoredValue]],
                       mode: str) -> float | None:
    """The half-width on the log scale of the pooled prediction interval for one more night of ``v``:
    t(0.975, df) * s_pooled * sqrt(1 + 1/n), s_pooled^2 = sum((n_i - 1) s_i^2) / df over ``v`` and its siblings
    (``mode``), df = sum(n_i - 1), n = v's own nights; None (the shipped rule) without a sibling."""
    def nights_of(w: StoredValue) -> list[float]:
        return [x.measured for night in history for x in night if x.key == w.key and x.measured is not None]
    own = nights_of(v)
    if len(own) < 3:
        return 0.0  # as shipped: no nights' spread before 3 nights
    if any(x <= 0 for x in own):
        return None
    if mode == "moderated":  # each value's own log variance, moderated by the run's others (Smyth 2004)
        own_logs = [math.log(x) for x in own]
        every = [[math.log(x) for x in xs] for xs in (nights_of(w) for w in now) if len(xs) >= 3 and min(xs) > 0]
        prior = fit_variance_prior([statistics.variance(x) for x in every], [len(x) - 1 for x in every])
        var, df = moderated_variance(statistics.variance(own_logs), len(own_logs) - 1, prior)
        return t_quantile(0.975, min(df, 1e6)) * math.sqrt(var) * math.sqrt(1 + 1 / len(own))
    group = [w for w in now if mode == "run" or w.quantity == v.quantity and (mode == "quantity" or (
        w.file == v.file and _base_id(w) == _base_id(v)))]
    if SCALE == "log":
        logs = [[math.log(x) for x in xs] for xs in (nights_of(w) for w in group) if len(xs) >= 2 and min(xs) > 0]
    else:
        logs = [[x / statistics.fmean(xs) for x in xs] for xs in (nights_of(w) for w in group)
                if len(xs) >= 2 and min(xs) > 0]
    if len(logs) < 2:
        return None
    df = sum(len(x) - 1 for x in logs)
    var = sum(statistics.variance(x) * (len(x) - 1) for x in logs) / df
    return t_quantile(0.975, df) * math.sqrt(var) * math.sqrt(1 + 1 / len(own))


def _factor_group(v: StoredValue) -> str:
    """The value's night-factor group (``--spread factor``): its point (file and ``at:``) or the whole night."""
    if FACTOR_GROUPS == "night":
        return "night"
    return v.file + "|" + ",".join(f"{a}={b}" for a, b in sorted(v.at.items()))


def _factor_splits(history: list[list[StoredValue]], now: list[StoredValue]) -> dict[str, Any]:
    """``--spread factor``: each value's residual and its group's night factor against the latest
    :data:`~_drift.SPREAD_RUNS` earlier nights (benchmarks/factor_spread.py); a value left out keeps the shipped
    rule."""
    nights = [{x.key: x.measured for x in night} for night in history[-max(_drift.SPREAD_RUNS, 1):]]
    return factor_outside(nights, {v.key: v.measured for v in now},
                          {v.key: -1 if v.dimension == "throughput" else 1 for v in now},
                          {v.key: _factor_group(v) for v in now}, residual=FACTOR_RESIDUAL, level=FACTOR_LEVEL)


#: the depths (earlier nights) the figures are given at (--depths), and the most histories drawn per tonight at a
#: depth whose choices are more (--max-histories; 0: every choice)
DEPTHS: tuple[int, ...] = (1, 3, 5)
MAX_HISTORIES = 0
SEED = 21


def _policy(depth: int) -> DriftPolicy:
    """The drift policy a night is judged by: the shipped ``previous`` baseline, or (``--baseline median``) the
    median of the ``depth`` earlier nights (``median:N``, whose nights' spread reads max(N, SPREAD_RUNS) nights)."""
    return DriftPolicy(THRESHOLD, "previous" if BASELINE == "previous" else f"median:{max(1, depth)}", MACHINE)


BASELINE = "previous"


def _histories(others: list[Any], depth: int) -> list[tuple[Any, ...]]:
    """Every choice of ``depth`` of ``others`` (kept in their recorded order: oldest first), or, where there are
    more than :data:`MAX_HISTORIES`, that many drawn at random without repeats (seeded by --seed, the number of
    runs and the depth, so every rule and variant is judged on the same histories)."""
    n = len(others)
    if depth > n:
        return []
    if not MAX_HISTORIES or math.comb(n, depth) <= MAX_HISTORIES:
        return list(itertools.combinations(others, depth))
    rng = np.random.default_rng([SEED, n, depth])  # the same draws for every rule compared at this depth
    picks: set[tuple[int, ...]] = set()
    while len(picks) < MAX_HISTORIES:
        picks.add(tuple(sorted(int(i) for i in rng.choice(n, size=depth, replace=False))))
    return [tuple(others[i] for i in idx) for idx in sorted(picks)]


def _judge(history: list[list[StoredValue]], now: list[StoredValue], keys: set[str] | None = None,
           with_keys: bool = False, keep_new: bool = False) -> list[Any]:
    """(status, beyond the threshold alone) of each value of ``now`` against the earlier nights ``history``
    (oldest first; the baseline is the previous night); (key, status, beyond) with ``with_keys``. A value with no
    baseline (``new``) is left out, unless ``keep_new`` (the held rule: a night whose earlier nights all measured
    the value at a point that did not hold its concurrency has no baseline, and that is counted, not hidden). A what-if
    :data:`SPREAD` other than ``nights`` judges with the nights' spread off, then calls a drifted value whose
    change is within its pooled spread uncertain (the same verdict the rule would give with that spread)."""
    nights = [_night(i, h) for i, h in enumerate(history)]
    if SPREAD == "none":
        with mock.patch.object(_drift, "_runs_spread", lambda xs, level=0.95: 0.0):
            drifts = drift_for(now, nights, _policy(len(history)), setup=SETUP)
    elif SPREAD == "nights" and CENTER == "mean":
        drifts = drift_for(now, nights, _policy(len(history)), setup=SETUP)
    else:
        shipped = _drift._runs_spread
        with mock.patch.object(_drift, "_runs_spread", lambda xs, level=0.95: 0.0):
            drifts = drift_for(now, nights, _policy(len(history)), setup=SETUP)
        splits = _factor_splits(history, now) if SPREAD == "factor" else {}
        for v in now:
            d = drifts[v.key]
            if d.status is not DriftStatus.DRIFTED or d.now is None or d.baseline is None:
                continue
            own = [x.measured for night in history for x in night if x.key == v.key and x.measured is not None]
            own = own[-max(_drift.SPREAD_RUNS, 1):]
            split = splits.get(v.key)
            half = None if SPREAD in ("nights", "factor") else _pooled_log_spread(v, now, history, SPREAD)
            if split is not None and d.baseline > 0 and d.now > 0:
                inside = not split.outside  # the residual's test OR the point's factor's test
            elif half is None or d.baseline <= 0 or d.now <= 0:
                centre = statistics.fmean(own) if CENTER == "mean" else d.baseline
                inside = abs(d.now - centre) <= shipped(own)
            elif SCALE == "log":
                centre = statistics.fmean(math.log(x) for x in own) if CENTER == "mean" else math.log(d.baseline)
                inside = abs(math.log(d.now) - centre) <= half
            else:
                centre = statistics.fmean(own) if CENTER == "mean" else d.baseline
                inside = abs(d.now - centre) <= half * statistics.fmean(own)
            if inside:
                drifts[v.key] = replace(d, status=DriftStatus.UNCERTAIN)
    out = []
    for v in now:
        if keys is not None and v.key not in keys:
            continue
        d = drifts[v.key]
        if d.status is DriftStatus.NOT_MEASURED or d.status is DriftStatus.NEW and not keep_new:
            continue
        beyond = d.status in (DriftStatus.DRIFTED, DriftStatus.UNCERTAIN)
        out.append((v.key, d.status.value, beyond) if with_keys else (d.status.value, beyond))
    return out


def _share(judged: list[tuple[str, bool]], status: str) -> str:
    n = len(judged)
    k = sum(s == status for s, _b in judged)
    return f"{k}/{n} = {k / n:.1%}" if n else "—"


def _old_rule(judged: list[tuple[str, bool]]) -> str:
    n = len(judged)
    k = sum(b for _s, b in judged)
    return f"{k}/{n} = {k / n:.1%}" if n else "—"


#: the change the runs make: max_num_seqs 4 -> 2. It caps how many requests the engine runs at once, so it can only
#: move a point whose concurrency is above the new cap (at C <= 2 both configurations run every request at once)
NEW_MAX_NUM_SEQS = 2


def _concurrency(v: StoredValue) -> int:
    return int(v.at.get("concurrency", "0"))


def _unheld(run: dict[str, Any], point: str) -> bool:
    """The run's point held less than :data:`HELD_SHARE` of its concurrency (the run's ``held`` figures; a run
    recorded without them, or a point the count never filled, reads as held, as an old store's value does)."""
    share = (run.get("held") or {}).get(point)
    return share is not None and share < HELD_SHARE


def _values(run: dict[str, Any], rank: bool, rule: bool = False) -> list[StoredValue]:
    """The run's stored values; with ``rank``, each latency quantile with its point's per-request sketch, as the
    history now stores it (``history._samples``: what the rank test compares); with ``rule``, a value at a point
    that did not hold its concurrency carries the point in ``unheld_points``, as the history now stores it (drift
    then calls it uncertain tonight and skips it as a baseline)."""
    out = []
    for d in run["values"]:
        if d["measured"] is None:
            continue
        v = _value(d)
        point_id = f"closed-c{_concurrency(v)}"
        metric = per_request_metric(v.quantity)
        point = run["requests"].get(point_id)
        if rank and metric is not None and point is not None:
            v = replace(v, samples=sketch(point[f"{metric}_s"]))
        if rule and _unheld(run, point_id):
            v = replace(v, unheld_points=(point_id,))
        out.append(v)
    return out


def _affected(by: dict[int, list[list[StoredValue]]]) -> tuple[set[str], set[str], dict[str, float]]:
    """(affected, unaffected, median ratio 2-runs / 4-runs by key). Affected: the mechanism can move the point
    (its concurrency is above the new cap) AND the runs' own medians of the two configurations differ by more than
    the 10 % threshold (a change drift is not asked to flag is not a miss)."""
    def med(group: list[list[StoredValue]], key: str) -> float:
        return statistics.median(v.measured for night in group for v in night if v.key == key and v.measured)

    keys = {v.key for night in by[4] for v in night}
    conc = {v.key: _concurrency(v) for night in by[4] for v in night}
    ratio = {k: med(by[2], k) / med(by[4], k) for k in keys}
    affected = {k for k in keys if conc[k] > NEW_MAX_NUM_SEQS and abs(ratio[k] - 1) > 0.10}
    return affected, keys - affected, ratio


def _print_correlations(plain: dict[int, list[list[StoredValue]]]) -> None:
    """``--spread factor``: how correlated a configuration's runs' values are, raw and after taking out one night
    factor or one per point (the residuals (1) pools: it assumes them near independent), beside the same figures
    for independent values (benchmarks/factor_spread.py's residual_correlations)."""
    print("  correlation of the runs' signed log values across the predictions (mean r, mean |r|, participation "
          "ratio PR = effective number of independent values of the 8; in brackets: independent values' |r|, PR):")
    for s, nights in plain.items():
        keys = sorted({v.key for v in nights[0]})
        keys = [k for k in keys if all((n_v.measured or 0) > 0 for n in nights for n_v in n if n_v.key == k)
                and all(any(n_v.key == k for n_v in n) for n in nights)]
        if len(nights) < 4 or len(keys) < 4:
            continue
        first = {v.key: v for v in nights[0]}
        matrix = np.array([[math.log(next(v.measured or 1.0 for v in n if v.key == k)) for k in keys]
                           for n in nights])
        stats = residual_correlations(matrix, [-1 if first[k].dimension == "throughput" else 1 for k in keys],
                                      [f"c{_concurrency(first[k])}" for k in keys])
        print(f"    max_num_seqs {s} ({len(nights)} runs, {len(keys)} values): " + "; ".join(
            f"{how} {a:+.2f} / {b:.2f} / PR {c:.1f} ({nb:.2f}, {nc:.1f})"
            for how, (a, b, c, nb, nc) in stats.items()))


def real_runs(runs: list[dict[str, Any]], name: str) -> None:
    print(f"== {name}")
    loads = [r.get("loadavg_1min") for r in runs]
    if all(loads):
        print("  1-minute load average during each run (2 cores): "
              + ", ".join(f"{r['name']} {r['loadavg_1min']['mean']:.1f}" for r in runs))
    plain = {s: [_values(r, rank=False) for r in runs if r["max_num_seqs"] == s] for s in (4, 2)}
    affected, unaffected, ratio = _affected(plain)
    print(f"  real CPU-engine runs: {len(plain[4])} with max_num_seqs 4, {len(plain[2])} with 2 (one engine start "
          f"each). Affected by 4 -> 2 (concurrency above {NEW_MAX_NUM_SEQS} and the configurations' medians more "
          f"than 10% apart): {len(affected)} of {len(affected | unaffected)}")
    # the change in units of the run-to-run noise (sd of log values within each configuration, pooled), and the
    # most any test with a 5 % false-alarm rate could detect of one night against a perfectly known baseline
    # and a perfectly known noise level: P(|z| > 1.96) for z ~ N(d, 1)
    norm = statistics.NormalDist()
    bests: list[float] = []
    for k in sorted(ratio):
        logs = [[math.log(v.measured) for n in plain[s] for v in n if v.key == k and v.measured] for s in (4, 2)]
        dof = sum(len(x) - 1 for x in logs)
        sd = math.sqrt(sum(statistics.variance(x) * (len(x) - 1) for x in logs) / dof) if dof > 0 else math.nan
        d = abs(math.log(ratio[k])) / sd if sd > 0 else math.inf
        best = norm.cdf(d - 1.96) + norm.cdf(-d - 1.96)
        print(f"    {k.split('::')[1]:28s} median 2-runs / 4-runs = {ratio[k]:.2f}  "
              f"{'affected' if k in affected else 'not affected':12s}  run-to-run sd {sd:.2f} (log)  change "
              f"{d:.1f} sd  best possible detection at 5% false alarms {best:.0%}")
        if k in affected:
            bests.append(best)
    if bests:
        print(f"    the best any test could do at the affected predictions (5% false alarms, noise and baseline known "
              f"exactly): {statistics.fmean(bests):.0%} detection on average")
    if SPREAD == "factor":
        _print_correlations(plain)
    # how far each run sits from its configuration's median (the run-to-run noise), beside its load
    print("  each run's mean |log(value / its configuration's median)| over the 8 predictions (run-to-run noise):")
    pairs: list[tuple[float, float]] = []
    others: list[tuple[float, float]] = []
    helds: list[tuple[float, float]] = []
    for s in (4, 2):
        for r, night in zip([r for r in runs if r["max_num_seqs"] == s], plain[s], strict=True):
            devs = []
            for v in night:
                m = statistics.median(w.measured for n in plain[s] for w in n if w.key == v.key and w.measured)
                if v.measured and m:
                    devs.append(abs(math.log(v.measured / m)))
            load = r.get("loadavg_1min")
            other = r.get("other_cpu_share")
            print(f"    {r['name']:6s} max_num_seqs {s}: {statistics.fmean(devs):.2f}"
                  + (f"   load {load['mean']:.1f} (max {load['max']:.1f})" if load else "")
                  + (f"   other processes' CPU share {other:.0%}" if other is not None else ""))
            if load:
                pairs.append((load["mean"], statistics.fmean(devs)))
            if other is not None:
                others.append((other, statistics.fmean(devs)))
            shares = [x for x in (r.get("held") or {}).values() if x is not None]
            if shares:
                helds.append((statistics.fmean(shares), statistics.fmean(devs)))

    def ranks(xs: list[float]) -> list[float]:
        order = sorted(range(len(xs)), key=lambda i: xs[i])
        out = [0.0] * len(xs)
        for r, i in enumerate(order):
            out[i] = float(r)
        return out
    for what, xy in (("load average", pairs), ("other processes' CPU share", others),
                     ("mean held concurrency share (its points')", helds)):
        if len(xy) >= 4:
            rho = statistics.correlation(ranks([a for a, _ in xy]), ranks([b for _, b in xy]))
            print(f"  Spearman correlation of a run's {what} with its distance from its configuration's median: "
                  f"{rho:+.2f} over {len(xy)} runs")
    has_held = any(r.get("held") for r in runs)
    if has_held:
        print("  each run's points' held concurrency (held_in_flight / C; under "
              f"{HELD_SHARE:.0%} is not held): " + ", ".join(
                  f"{r['name']} " + "/".join(f"{(r.get('held') or {}).get(pt, math.nan):.2f}"
                                             for pt in sorted(r.get("held") or {})) for r in runs))
        pts = [(r["name"], pt, x) for r in runs for pt, x in sorted((r.get("held") or {}).items())]
        under = [t for t in pts if t[2] is not None and t[2] < HELD_SHARE]
        print(f"    points ({', '.join(sorted({pt for _n, pt, _x in pts}))}): {len(under)} of {len(pts)} held under "
              f"{HELD_SHARE:.0%}")
    else:
        print("  no held figures recorded with these runs: the held rule changes nothing here (every value reads as "
              "held, as in a store written before it was kept)")
    for rank in (False, True):
        test = ("stored 95 % intervals AND the rank test on per-request samples where both nights kept them "
                "(latency p50s): the shipped rule" if rank else "stored 95 % intervals only (the store before samples)")
        print(f"  -- {test}")
        for depth in DEPTHS:
            figures = {rule: _four_to_two(runs, rank, rule, depth, affected, unaffected)
                       for rule in ((False, True) if has_held else (False,))}
            same, hit, miss_ok, per_key = figures[False]
            if not same and not hit:
                continue
            label = (f"vs 1 earlier night (no night-to-night spread yet: nothing is called drifted before "
                     f"{_drift.MIN_NIGHTS} earlier nights)" if depth == 1 else
                     f"vs {depth} earlier nights (baseline: {_policy(depth).describe()}, plus the nights' spread)")
            print(f"    tonight {label}:")
            print(f"      identical configuration, {len(same)} prediction-nights: drifted {_share(same, 'drifted')}"
                  f" (goal <= 5%), uncertain {_share(same, 'uncertain')}; old rule (10% alone) {_old_rule(same)}")
            print(f"      4 -> 2 at the {len(affected)} affected predictions, {len(hit)} prediction-nights: drifted "
                  f"{_share(hit, 'drifted')} (goal >= 90%), uncertain {_share(hit, 'uncertain')}; "
                  f"old rule {_old_rule(hit)}")
            if depth == 1:  # what the within-run intervals alone would say (the rule before 2026-12-06)
                with mock.patch.object(_drift, "MIN_NIGHTS", 1):
                    alone, alone_hit, _m, _k = _four_to_two(runs, rank, False, 1, affected, unaffected)
                print(f"      the within-run intervals alone (the rule before 2026-12-06): identical configuration "
                      f"drifted {_share(alone, 'drifted')}; 4 -> 2 affected drifted {_share(alone_hit, 'drifted')}")
            if unaffected:
                print(f"      4 -> 2 at the {len(unaffected)} unaffected, {len(miss_ok)} prediction-nights: drifted "
                      f"{_share(miss_ok, 'drifted')}, uncertain {_share(miss_ok, 'uncertain')}")
            if True in figures:
                h_same, h_hit, h_miss, _h = figures[True]
                print(f"      WITH the held rule (a value at a point under {HELD_SHARE:.0%} held is uncertain; such "
                      "nights are no baseline, so a value with no held earlier night is new):")
                print(f"        identical configuration, {len(h_same)} prediction-nights: drifted "
                      f"{_share(h_same, 'drifted')} (goal <= 5%), uncertain {_share(h_same, 'uncertain')}, new (no "
                      f"held earlier night) {_share(h_same, 'new')}")
                print(f"        4 -> 2 affected, {len(h_hit)} prediction-nights: drifted "
                      f"{_share(h_hit, 'drifted')} (goal >= 90%), uncertain {_share(h_hit, 'uncertain')}, new "
                      f"{_share(h_hit, 'new')}")
                if unaffected:
                    print(f"        4 -> 2 unaffected, {len(h_miss)} prediction-nights: drifted "
                          f"{_share(h_miss, 'drifted')}, uncertain {_share(h_miss, 'uncertain')}, new "
                          f"{_share(h_miss, 'new')}")
            if rank and depth == 3:
                for k in sorted(per_key):
                    sts = per_key[k]
                    print(f"        {k.split('::')[1]:28s} drifted {sum(x == 'drifted' for x in sts)}/{len(sts)}")


def _four_to_two(runs: list[dict[str, Any]], rank: bool, rule: bool, depth: int, affected: set[str],
                 unaffected: set[str]) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]],
                                                list[tuple[str, bool]], dict[str, list[str]]]:
    """(identical-configuration judgements, 4 -> 2 at the affected predictions, 4 -> 2 at the unaffected, the
    affected ones' statuses by key): every run of a configuration as tonight against every choice of ``depth``
    other runs of it, and every 2-run against every choice of ``depth`` 4-runs; with ``rule``, values at points
    that did not hold their concurrency carry it (:func:`_values`)."""
    by = {s: [_values(r, rank, rule) for r in runs if r["max_num_seqs"] == s] for s in (4, 2)}
    same: list[tuple[str, bool]] = []
    hit: list[tuple[str, bool]] = []
    miss_ok: list[tuple[str, bool]] = []
    per_key: dict[str, list[str]] = {}
    for s in (4, 2):
        for tonight in range(len(by[s])):
            others = [n for i, n in enumerate(by[s]) if i != tonight]
            for history in _histories(others, depth):
                same += _judge(list(history), by[s][tonight], keep_new=rule)
    for history in _histories(by[4], depth):
        for tonight in by[2]:
            judged = _judge(list(history), tonight, affected, with_keys=True, keep_new=rule)
            for k, st, _b in judged:
                per_key.setdefault(k, []).append(st)
            hit += [(st, b) for _k, st, b in judged]
            miss_ok += _judge(list(history), tonight, unaffected, keep_new=rule)
    return same, hit, miss_ok, per_key


#: the known changes ``scaled`` applies to a real night: every stored figure multiplied by this factor
FACTORS = (1.1, 1.25, 1.5, 2.0, 3.0, 5.0)


def _scaled(v: StoredValue, factor: float) -> StoredValue:
    """``v`` with its value, interval and per-request samples all multiplied by ``factor``."""
    def m(x: float | None) -> float | None:
        return None if x is None else x * factor
    return replace(v, measured=m(v.measured), measured_lo=m(v.measured_lo), measured_hi=m(v.measured_hi),
                   samples=tuple(x * factor for x in v.samples))


def per_key_all(keyed: dict[str, list[str]]) -> list[str]:
    """Every status in a by-key table, flattened."""
    return [st for sts in keyed.values() for st in sts]


def _best_possible(by: dict[int, list[list[StoredValue]]], factor: float) -> float:
    """The mean over predictions of P(|z| > 1.96) for z ~ N(ln(factor) / sd, 1), sd the run-to-run standard deviation
    of the prediction's log value pooled over the configurations (a value <= 0 has no log and is left out)."""
    norm = statistics.NormalDist()
    keys = {v.key for nights in by.values() for n in nights for v in n}
    out = []
    for k in sorted(keys):
        logs = [[math.log(v.measured) for n in nights for v in n if v.key == k and v.measured and v.measured > 0]
                for nights in by.values()]
        dof = sum(len(x) - 1 for x in logs if len(x) > 1)
        if dof <= 0:
            continue
        sd = math.sqrt(sum(statistics.variance(x) * (len(x) - 1) for x in logs if len(x) > 1) / dof)
        d = math.log(factor) / sd if sd > 0 else math.inf
        out.append(norm.cdf(d - 1.96) + norm.cdf(-d - 1.96))
    return statistics.fmean(out) if out else math.nan


def scaled(runs: list[dict[str, Any]], name: str, rule: bool = False) -> dict[int, dict[float, tuple[int, int]]]:
    """A change of known size on the machine's real run-to-run noise: within one configuration, each run as
    tonight with every stored value, interval and per-request sample multiplied by a factor, against every choice
    of 3 (and 5) of the other runs of that configuration as the earlier nights (the shipped rule: intervals, rank
    test, nights' spread). Factor 1 is the identical-configuration false drift. Every prediction is changed, so
    every one counts. With ``rule``, the held rule applies (a value at a point that did not hold its concurrency
    is uncertain tonight and no baseline; scaling leaves a point's held figure as it was). Returns {depth:
    {factor: (drifted, judged)}}."""
    print(f"== {name}: a known change on real run-to-run noise (tonight = a real run with everything x factor)"
          + (f", WITH the held rule (under {HELD_SHARE:.0%} held: uncertain, no baseline)" if rule else ""))
    by = {s: [_values(r, rank=True, rule=rule) for r in runs if r["max_num_seqs"] == s] for s in (4, 2)}
    out: dict[int, dict[float, tuple[int, int]]] = {}
    for depth in (d for d in DEPTHS if d >= _drift.MIN_NIGHTS):
        if all(len(nights) <= depth for nights in by.values()):
            continue
        row: dict[float, tuple[int, int]] = {}
        per_key: dict[float, dict[str, list[str]]] = {}
        for factor in (1.0, *FACTORS):
            judged: list[tuple[str, bool]] = []
            keyed: dict[str, list[str]] = {}
            for nights in by.values():
                for t in range(len(nights)):
                    others = [n for i, n in enumerate(nights) if i != t]
                    now = [_scaled(v, factor) for v in nights[t]]
                    for history in _histories(others, depth):
                        for k, st, b in _judge(list(history), now, with_keys=True, keep_new=rule):
                            judged.append((st, b))
                            keyed.setdefault(k, []).append(st)
            row[factor] = (sum(st == "drifted" for st, _b in judged), len(judged))
            per_key[factor] = keyed
            goal = "goal <= 5%" if factor == 1.0 else "goal >= 90%"
            print(f"  vs {depth} earlier nights, x{factor:g}: drifted {_share(judged, 'drifted')} ({goal}), "
                  f"uncertain {_share(judged, 'uncertain')}"
                  + (f", new (no held earlier night) {_share(judged, 'new')}" if rule else
                     f"; old rule (10% alone) {_old_rule(judged)}"))
        if depth == 3:
            keys = sorted(per_key[1.0])
            print("    per prediction, drifted share at x" + " / x".join(f"{f:g}" for f in (1.0, *FACTORS)) + ":")
            for k in keys:
                shares = [sum(x == "drifted" for x in per_key[f][k]) / len(per_key[f][k]) for f in (1.0, *FACTORS)]
                print(f"      {k.split('::')[1]:28s} " + " ".join(f"{x:4.0%}" for x in shares))
            print("    the best any test could do (5% false alarms, one night against a baseline and a noise level "
                  "known exactly; pooled run-to-run sd of each prediction's log value): "
                  + ", ".join(f"x{f:g} {_best_possible(by, f):.0%}" for f in FACTORS))
        compared = sum(st != "new" for st in per_key_all(per_key[1.0]))
        if not compared:
            print(f"    nothing compared with {depth} earlier nights: every prediction-night is new (no held "
                  "earlier night)")
            out[depth] = row
            continue
        false_ok = row[1.0][0] <= 0.05 * row[1.0][1]
        found = [f for f in FACTORS if row[f][0] >= 0.9 * row[f][1]]
        print(f"    smallest change detected >= 90% with {depth} earlier nights: "
              + (f"x{found[0]:g}" if found else f"none up to x{FACTORS[-1]:g}")
              + f" (false drift {row[1.0][0] / row[1.0][1]:.1%}: {'within' if false_ok else 'OVER'} the 5% goal)")
        out[depth] = row
    return out


def _p50_value(key: str, dimension: str, samples: np.ndarray) -> StoredValue:
    iv = percentile_interval(samples, 0.5)
    return StoredValue(key=key, prediction_id=key, file="drift_cpu.yaml", quantity=key, dimension=dimension,
                       status="pass", mode="measured", unit="ms", measured=iv.estimate,
                       measured_lo=iv.lo if np.isfinite(iv.lo) else None,
                       measured_hi=iv.hi if np.isfinite(iv.hi) else None, interval_method=iv.method,
                       predicted_text="ink", definition_hash="same")


def resampled(runs: list[dict[str, Any]], k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    same: list[tuple[str, bool]] = []
    changed: list[tuple[str, bool]] = []
    for r in runs:
        for point, samples in r["requests"].items():
            for metric, xs in samples.items():
                arr = np.asarray(xs, dtype=np.float64)
                if arr.size < 20 or not np.any(arr > 0):
                    continue
                key = f"{point}:{metric}"
                for _ in range(k):
                    a = _p50_value(key, "time", rng.choice(arr, arr.size))
                    b = _p50_value(key, "time", rng.choice(arr, arr.size))
                    # the within-run intervals alone, as a what-if: the shipped rule never calls a value drifted
                    # against fewer than MIN_NIGHTS earlier nights, so against one it would say nothing here
                    with mock.patch.object(_drift, "MIN_NIGHTS", 1):
                        same += _judge([[a]], [b])
                        c = _p50_value(key, "time", rng.choice(arr, arr.size) * 1.5)
                        changed += _judge([[a]], [c])
    print(f"resampled nights (within-run noise only; {k} pairs per point and metric, p50s with order-statistic "
          f"intervals; the intervals alone, without the {_drift.MIN_NIGHTS} earlier nights drift needs):")
    print(f"  identical: drifted {_share(same, 'drifted')}, uncertain {_share(same, 'uncertain')}; old rule "
          f"{_old_rule(same)}")
    print(f"  every sample x1.5: drifted {_share(changed, 'drifted')}, uncertain {_share(changed, 'uncertain')}; "
          f"old rule {_old_rule(changed)}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--record", nargs="+", type=Path, metavar="RUN_DIR",
                   help="--roofline-out folders of runs of benchmarks/drift_cpu.yaml: rewrite the data file")
    p.add_argument("--held", nargs="+", type=Path, metavar="RUN_DIR",
                   help="the --roofline-out folders the first data file was recorded from: add each run's points' "
                        "held concurrency (held_in_flight / C) to it")
    p.add_argument("--k", type=int, default=200, help="resampled pairs per point and metric (default 200)")
    p.add_argument("--seed", type=int, default=21)
    p.add_argument("--spread", choices=SPREADS, default="nights",
                   help="what-if nights' spread: nights (the shipped rule), prediction (log variance pooled over the "
                        "same prediction's points), quantity (pooled over the quantity's values in the run), run "
                        "(over every value in the run), moderated (each value's own, moderated by the run's others: "
                        "benchmarks/moderated_spread.py), factor (a night factor and each value's residual: "
                        "benchmarks/factor_spread.py), none (no nights' spread: the ceiling)")
    p.add_argument("--factor-groups", choices=("point", "night"), default="point",
                   help="--spread factor: one night factor per point (file and at:) or one per night")
    p.add_argument("--factor-residual", choices=("moderated", "pooled"), default="moderated",
                   help="--spread factor: the residuals' variance moderated (Smyth) or pooled over the run's values")
    p.add_argument("--factor-level", type=float, default=0.975,
                   help="--spread factor: the level of each of its two tests (default 0.975: their OR ~5%%)")
    p.add_argument("--center", choices=("baseline", "mean"), default="mean",
                   help="the nights' spread test measures tonight's distance from the nights' mean (shipped: the "
                        "prediction interval's centre) or, the rule before 2026-12-05's afternoon, from the baseline")
    p.add_argument("--scale", choices=("log", "relative"), default="log",
                   help="what a pooled spread pools: the nights' log values, or each value's nights over their mean")
    p.add_argument("--depths", default="1,3,5",
                   help="the numbers of earlier nights to give the figures at (default 1,3,5; a data file of more "
                        "runs per configuration allows more, e.g. 1,3,5,8,11,15)")
    p.add_argument("--max-histories", type=int, default=0,
                   help="at most this many choices of earlier nights per tonight, drawn at random (seeded) where "
                        "there are more (default 0: every choice)")
    p.add_argument("--baseline", choices=("previous", "median"), default="previous",
                   help="the baseline: the previous night (shipped default) or the median of the N earlier nights "
                        "(--roofline-baseline median:N, N the depth)")
    p.add_argument("--machine", default="", metavar="SHARE",
                   help="drift's machine rule on (--roofline-drift-machine SHARE, e.g. 20%%; shipped default: off)")
    p.add_argument("--spread-runs", type=int, default=None,
                   help="what-if: the nights' spread from the latest N nights (shipped: "
                        f"history._drift.SPREAD_RUNS = {_drift.SPREAD_RUNS})")
    p.add_argument("--data", type=Path, nargs="+", default=None,
                   help="the data files to read (default: the four in benchmarks/data/); --record writes the first "
                        f"({DATA_FILES[0].name} by default)")
    args = p.parse_args(argv)
    global SPREAD, SCALE, CENTER, FACTOR_GROUPS, FACTOR_RESIDUAL, FACTOR_LEVEL, DEPTHS, MAX_HISTORIES, SEED, BASELINE
    global MACHINE
    DEPTHS = tuple(int(d) for d in args.depths.split(","))
    MAX_HISTORIES, SEED = args.max_histories, args.seed
    BASELINE = args.baseline
    if BASELINE != "previous":
        print("baseline: the median of the N earlier nights (median:N)")
    if args.machine:
        MACHINE = args.machine
        print(f"the machine rule on: a night whose host probe is further than {args.machine} from the other nights' "
              "is not judged (--roofline-drift-machine)")
    if args.spread_runs is not None:
        _drift.SPREAD_RUNS = args.spread_runs
        print(f"what-if: the nights' spread from the latest {args.spread_runs} nights (shipped: 5)")
    SPREAD, SCALE, CENTER = args.spread, args.scale, args.center
    FACTOR_GROUPS, FACTOR_RESIDUAL, FACTOR_LEVEL = args.factor_groups, args.factor_residual, args.factor_level
    print(f"nights' spread rule: {SPREAD}"
          + (f" ({SCALE} scale)" if SPREAD not in ("nights", "none", "factor") else "")
          + (f" (a night factor per {FACTOR_GROUPS}, residual variance {FACTOR_RESIDUAL}, each test at "
             f"{FACTOR_LEVEL:g})" if SPREAD == "factor" else "")
          + f", measured from the {CENTER}")
    if args.record:
        record(args.record, (args.data or DATA_FILES)[0])
    if args.held:
        add_held(args.held, (args.data or DATA_FILES)[0])
    args.data = args.data or [p for p in DATA_FILES if p.is_file()]
    for path in args.data:
        runs = json.loads(path.read_text())["runs"]
        label = str(path.relative_to(HERE.parent)) if path.is_relative_to(HERE.parent) else path.name
        real_runs(runs, label)
        scaled(runs, label)
        if any(r.get("held") for r in runs):
            scaled(runs, label, rule=True)
    resampled(json.loads(args.data[0].read_text())["runs"], args.k, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
