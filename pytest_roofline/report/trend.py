"""The trend page: every prediction's numbers night by night, from a history store's index alone.

``roofline history URI`` renders it. Like the scorecard it is one self-contained HTML file: inline CSS and SVG,
no script, no font, no request (the same Content-Security-Policy), light or dark as the reader's system prefers.

What it reads: the :class:`~pytest_roofline.history.RunSummary` lines a store's ``runs()`` returns — never a
run's full record, so a history of hundreds of nights renders in about a second. What it shows:

* one section per hardware × model. Runs of different engine versions are different setups for drift (they are
  never each other's baseline), but an upgrade is what a reader looks for, so a section holds every version of its
  hardware × model on one axis, and a vertical rule labelled with the new version marks each change;
* a summary table: each prediction's latest status, its latest measured (or model) value, its drift against the
  previous night of the same setup, and on how many nights it was checked. "Latest" is the latest run of the
  prediction's *file*: a nightly that runs each prediction file in its own pytest session stores one run per file,
  and the setup's last run then holds one file only. A night is one run of a prediction file;
* one small chart per prediction, over the runs of its file: the measured value night by night (each point
  coloured by that night's outcome as pytest reported it: an expected miss is xfail, an unexpected pass XPASS; a
  run stored before outcomes were kept shows its verdict status; the x axis is ordinal, a place per run evenly
  spaced whatever the time between runs, labelled "runs in order, not to time scale", its ticks the runs' dates),
  the predicted band (lo..hi, shaded, stepping where the YAML changed) and the model's value as a line (it moves
  when the model or the YAML changes). A math-only prediction draws its model line alone. Hovering a point shows
  the night's date, commit, engine version, measured value and verdict; hovering a step of the band or of the model
  line, its value and the nights it held. The latest ten nights are also listed under the chart.
* the nights a chart cannot judge, marked (:func:`_night_marks`): a night whose machine ran more than
  :data:`~pytest_roofline.history.MACHINE_SHIFT` apart from the earlier nights of its setup (the host probe, by
  drift's own rule and reference: :func:`~pytest_roofline.history.night_machine`'s median of the earlier nights,
  :func:`~pytest_roofline.history.machine_apart`) has a shaded column behind it, a night measured at a point that did
  not hold its concurrency a ring around its dot; the point's tooltip and a row under the night in its table say
  why, with the numbers (the summary table the latest night's), and the legend explains a mark only on a chart that
  has one. The rule marks a night whether or not drift compared it, also a night drift calls ``new``. The
  reference is the earlier nights, as drift's, for every night with 3 or more earlier probed nights (drift's
  :data:`~pytest_roofline.history.MIN_NIGHTS`: with fewer it knows no machine, as it knows no spread); a night
  with fewer (the first three of a setup, or of a store that began keeping probes) is compared with the nearest as
  many other nights, earlier and later, as drift reads before a night, where 3 or more there are, so that a slow
  first night is marked as a reader of the chart expects and the nights just after it are not marked "faster" for
  being compared with it alone (its sentence says which nights it was compared with); a setup with fewer than four
  probed nights has none marked. A store without probes whose points all held renders byte for byte as it did
  before marks were drawn. The marks are worked out in one pass over a group's values, without asking drift about
  each night: with probes on every value, 500 nights × 100 predictions render in about the time they take
  without probes.

Size: the points of one verdict are one SVG ``<path>`` and each night's tooltip an invisible strip over its point,
so 500 nights × 100 predictions (50,000 points, each with its own tooltip) make a page of about 8 MB that renders
in about a second (``benchmarks/history_index.py``).

Entry points: :func:`render_trend` (runs → HTML text) and :func:`write_trend` (a store → a file, atomically).
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import math
import os
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_roofline import redact
from pytest_roofline.history import (
    DEFAULT_BASELINE,
    DEFAULT_DRIFT,
    MACHINE_SHIFT,
    MIN_NIGHTS,
    SPREAD_RUNS,
    Drift,
    DriftPolicy,
    HistoryStore,
    RunSummary,
    SetupKey,
    StoredValue,
    changed_badge,
    drift_for,
    machine_apart,
    machine_moved,
    night_probe,
    other_workload,
    reference_probe,
    unify_keys,
)
from pytest_roofline.report.common import (
    EXPLAIN_CSS,
    OUTCOME_COLOR,
    OUTCOME_LABEL,
    fmt_value,
    id_html,
    is_number,
)
from pytest_roofline.report.resources import css
from pytest_roofline.report.scorecard import CSP, PAGE_CSS
from pytest_roofline.report.svg import PALETTE, Axis, Chart, compact_number, esc, nice_ticks
from pytest_roofline.units import DEFAULT_UNIT, UnitError, format_value, shown_unit, signed_percent, unit_scale

__all__ = ["render_trend", "write_trend", "select_runs", "TREND_CSS", "DEFAULT_OUTPUT", "TABLE_NIGHTS"]

#: where ``roofline history`` writes the page when ``-o`` is not given
DEFAULT_OUTPUT = "roofline-history.html"
#: how many of the latest nights the table under each chart lists
TABLE_NIGHTS = 10

#: what a night shows (its stored pytest outcome, else its verdict status: ``StoredValue.shown``) → the outcome
#: name the reports' badges and colours use: an expected miss is xfail, as in the terminal, not FAIL
_OUTCOME_OF_STATUS = {"pass": "passed", "fail": "failed", "xfail": "xfailed", "xpass": "xpassed", "skip": "skipped",
                      "error": "error", "inconclusive": "inconclusive", "drifted": "failed"}
#: a night's word where it is not its outcome's label: a test failed by its drift is DRIFTED (the terminal's word,
#: in FAIL's colour), never a FAIL that hides why
_WORD = {"drifted": "DRIFTED"}
#: the order the dots of each outcome are drawn in (the later on top) and their legend lists them
_DOT_ORDER = ("pass", "xfail", "skip", "inconclusive", "xpass", "drifted", "fail", "error")
_VERSION_COLOR = PALETTE["purple"]
_MODEL_COLOR = PALETTE["blue"]
_BAND_COLOR = PALETTE["sky"]
_WHISKER_COLOR = "#3d4650"
#: a night whose machine ran apart (a shaded column behind it) and a night whose point did not hold its concurrency
#: (a ring around its dot): apart from the outcomes' colours and the predicted band's
_MACHINE_COLOR = PALETTE["yellow"]
_WORKLOAD_COLOR = PALETTE["orange"]
_UNHELD_COLOR = PALETTE["black"]
#: a trend chart's width and left margin (px), and the x axis' tick label size: its 11 px font at an average glyph
#: width of 0.62 em (DejaVu Sans, the widest of the fonts the page names, is about 0.6) and 10 px between labels
_CHART_WIDTH = 560
_CHART_MARGIN_LEFT = 64
_TICK_CHAR_PX = 11 * 0.62
_TICK_PAD_PX = 10


# ----------------------------------------------------------------------------------------------------------------
# selecting and grouping runs
# ----------------------------------------------------------------------------------------------------------------
def select_runs(runs: Iterable[RunSummary], *, setup: Sequence[str] = (), last: int | None = None) -> list[RunSummary]:
    """The runs the page shows, oldest first.

    ``setup``: keep a run when its setup text (``hardware · model · vllm version``) contains any of these texts
    (case-insensitive); ``last``: keep only the latest ``last`` runs of each prediction file on each hardware × model
    (a night is one run of a prediction file: with one pytest session per file, ``last=2`` keeps two nights of
    every file, not the last two sessions)."""
    wanted = [s.strip().lower() for s in setup if s and s.strip()]
    kept = [r for r in runs if not wanted or any(w in r.setup.text().lower() for w in wanted)]
    kept.sort(key=lambda r: (r.started_at, r.run_id))
    if last is not None:
        if last < 1:
            raise ValueError("--last must be a whole number >= 1")
        by_group: dict[tuple[str, str, str], list[RunSummary]] = {}
        for r in kept:
            for file in r.files or [""]:
                by_group.setdefault((*_group_key(r), file), []).append(r)
        keep_ids = {r.run_id for g in by_group.values() for r in g[-last:]}
        kept = [r for r in kept if r.run_id in keep_ids]
    return kept


def _group_key(r: RunSummary) -> tuple[str, str]:
    return (r.setup.hardware, r.setup.model)


@dataclass
class _Series:
    """One prediction across the nights of a group: ``values[i]`` is night ``i``'s value (None: not in that run)."""

    key: str
    values: list[StoredValue | None]
    latest: StoredValue = field(init=False)
    #: the prediction files its values name (one, but for old-scheme values matched to it: ``unify_keys``)
    files: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.latest = next(v for v in reversed(self.values) if v is not None)
        self.files = tuple(sorted({v.file for v in self.values if v is not None}))

    @property
    def measured_any(self) -> bool:
        return any(v is not None and is_number(v.measured) for v in self.values)


@dataclass
class _View:
    """The runs of a group that ran one prediction file: the x axis of its charts, and where its "latest" is. A
    nightly that runs each prediction file in its own pytest session (``pytest --gpu X file``) stores one run per
    file, so the group's latest run holds one file only: every other file's latest run is an earlier one."""

    index: list[int]  # the runs' places in the group, oldest first
    runs: list[RunSummary]

    @functools.cached_property
    def nights(self) -> _Nights:
        return _Nights(self.runs)

    @property
    def last(self) -> int:
        """The group index of the latest run that ran the file."""
        return self.index[-1]

    def values(self, s: _Series) -> list[StoredValue | None]:
        return [s.values[i] for i in self.index]


@dataclass
class _Group:
    hardware: str
    model: str
    runs: list[RunSummary]
    series: list[_Series]
    #: each prediction file → the indices of the runs that ran it (held a value of it), oldest first
    file_runs: dict[str, list[int]] = field(default_factory=dict)
    _views: dict[tuple[str, ...], _View] = field(default_factory=dict, repr=False)

    @property
    def versions(self) -> list[str]:
        return list(dict.fromkeys(r.setup.engine_version for r in self.runs))

    def view(self, s: _Series) -> _View:
        """The runs that ran ``s``'s file (one view per file, shared by its predictions' charts)."""
        got = self._views.get(s.files)
        if got is None:
            index = sorted({i for f in s.files for i in self.file_runs.get(f, ())}
                           | {i for i, v in enumerate(s.values) if v is not None})
            got = self._views[s.files] = _View(index, [self.runs[i] for i in index])
        return got

    @property
    def nights(self) -> int:
        """A group's nights: the most runs any one of its prediction files ran in. A night is one run of a file:
        a nightly that runs each file in its own pytest session stores one run per file, and those count once."""
        return max((len(ix) for ix in self.file_runs.values()), default=len(self.runs))

    def latest_of_files(self) -> list[tuple[str, int]]:
        """Each prediction file with the index of the latest run that ran it, in file order."""
        return [(f, ix[-1]) for f, ix in self.file_runs.items() if ix]


class _Nights:
    """What every chart of a group says about its nights, worked out once per group rather than once per chart
    (or per point): the x axis' dates and ticks, each night's tooltip head (date, commit, engine version) and
    the nights where the engine version changed."""

    def __init__(self, runs: Sequence[RunSummary]) -> None:
        n = len(runs)
        years = sorted({r.started_at[:4] for r in runs})
        self.one_year = len(years) == 1
        self.days = [_night(r)[:10] for r in runs]
        #: each run's start as the page writes it (``2026-12-05 19:48``, to the second where two runs of the group
        #: share a minute) and, where two share even the second, `` #k`` (its place among them): never the same twice
        self.whens, self.nths = _distinct_times(runs)
        self.tick_texts = [d[5:] for d in self.days] if self.one_year else self.days
        if len(set(self.days)) < n:  # nights that share a date: their time of day tells them apart
            self.tick_texts = [f"{t} {w[11:]}{k}" for t, w, k in zip(self.tick_texts, self.whens, self.nths)]
        # the axis is ordinal: each run of the file has one place, evenly spaced whatever the time between runs
        # (a week's gap and two runs an hour apart are one step each); its ticks are the dates of the runs there
        self.axis_label = (f"runs in order, not to time scale (UTC, {years[0]})" if self.one_year
                           else "runs in order, not to time scale (UTC)")
        plot_px = _CHART_WIDTH - _CHART_MARGIN_LEFT - _margin_right(self.one_year)
        self.ticks = _x_ticks(n, min_gap=_tick_gap(n, self.tick_texts, plot_px))
        self.heads = [f"{w} UTC{k} · {_commit(r)} · vllm {r.setup.engine_version}"
                      for w, k, r in zip(self.whens, self.nths, runs)]
        self.upgrades = [(i, runs[i].setup.engine_version) for i in range(1, n)
                         if runs[i].setup.engine_version != runs[i - 1].setup.engine_version]

    def tick_text(self, t: float) -> str:
        i = int(round(t))
        return self.tick_texts[i] if 0 <= i < len(self.tick_texts) else ""

    def when(self, i: int) -> str:
        """Run ``i``'s start, as its tooltip and the tables write it (``2026-12-05 19:48:07 #2``)."""
        return self.whens[i] + self.nths[i]

    def span_text(self, a: int, b: int) -> str:
        """Nights ``a..b`` in words, for the tooltip of a band or a model value that held over them."""
        if self.days[a] == self.days[b] and a != b:  # runs of one day: their times tell them apart
            return f"{b - a + 1} nights, {self.when(a)} to {self.when(b)}"
        return f"night {self.days[a]}" if a == b else f"{b - a + 1} nights, {self.days[a]} to {self.days[b]}"


def _distinct_times(runs: Sequence[RunSummary]) -> tuple[list[str], list[str]]:
    """Each run's start (UTC) to the minute, or to the second for every run when two share a minute; and a
    `` #k`` for each of the runs that share even their second (k: 1, 2, ... in start order), else ""."""
    whens = [_night(r) for r in runs]
    if len(set(whens)) < len(whens):
        whens = [_night(r, seconds=True) for r in runs]
    counts = Counter(whens)
    seen: Counter[str] = Counter()
    nths = []
    for w in whens:
        seen[w] += 1
        nths.append(f" #{seen[w]}" if counts[w] > 1 else "")
    return whens, nths


def _groups(runs: Sequence[RunSummary]) -> list[_Group]:
    by: dict[tuple[str, str], list[RunSummary]] = {}
    for r in runs:
        by.setdefault(_group_key(r), []).append(r)
    out = []
    for (hw, model), rs in sorted(by.items()):
        rs = unify_keys(rs)  # nights stored under the old key scheme join their prediction's series
        order: dict[str, int] = {}
        # the latest run's predictions first, in its order; then those only older runs held, newest first
        for r in reversed(rs):
            for v in r.values:
                order.setdefault(v.key, len(order))
        latest_keys = [v.key for v in rs[-1].values]
        keys = list(dict.fromkeys(latest_keys + sorted(order, key=order.__getitem__)))
        index = {k: i for i, k in enumerate(keys)}
        table: list[list[StoredValue | None]] = [[None] * len(rs) for _ in keys]
        file_runs: dict[str, list[int]] = {}
        for n, r in enumerate(rs):
            for v in r.values:
                table[index[v.key]][n] = v
                runs_of = file_runs.setdefault(v.file, [])
                if not runs_of or runs_of[-1] != n:
                    runs_of.append(n)
        files = sorted(file_runs)
        out.append(_Group(hw, model, rs, [_Series(k, table[index[k]]) for k in keys],
                          {f: file_runs[f] for f in files}))
    return out


# ----------------------------------------------------------------------------------------------------------------
# drift: the one definition is pytest_roofline.history.drift_for (its statuses, baselines and thresholds)
# ----------------------------------------------------------------------------------------------------------------
def _workload_changes(values: Sequence[StoredValue | None]) -> set[int]:
    """The night indices whose value ran another workload than the last earlier night that measured it
    (``history.other_workload``: other lengths or dataset; a peer's means within their slack are one)."""
    out: set[int] = set()
    last: StoredValue | None = None
    for i, v in enumerate(values):
        if v is None or not v.workload:
            continue
        if last is not None and other_workload(last.workload, v.workload):
            out.add(i)
        last = v
    return out


def _night_drifts(group: _Group, policy: DriftPolicy, *, own: bool = False) -> dict[int, dict[str, Drift]]:
    """The drift of each of the latest :data:`TABLE_NIGHTS` runs of each prediction file of ``group`` (the nights
    its tables list, its latest run's among them), against the earlier nights of its own setup (``drift_for``
    keeps only those), by run index and prediction key. ``own``: each night is judged under the policy it stored
    (the one its own log judged it by), ``policy`` filling what it did not store; else all under ``policy`` (a page
    drawn with --drift/--baseline). Trial s26a #6: a night judged at 5% read DRIFTED beside a green "-6.5%, within
    10%" cell, the latest night's policy."""
    out: dict[int, dict[str, Drift]] = {}
    wanted = sorted({i for ix in group.file_runs.values() for i in ix[-TABLE_NIGHTS:]}
                    or range(max(0, len(group.runs) - TABLE_NIGHTS), len(group.runs)))
    for i in wanted:
        r = group.runs[i]
        night = _run_policy(r, policy) if own else policy
        try:
            out[i] = drift_for(r.values, group.runs[:i], night, setup=r.setup)
        except Exception:  # noqa: BLE001 - a drift bug must not cost the whole page; the column says n/a
            out[i] = {}
    return out


def _drift_html(d: Drift | None, *, short: bool = False) -> str:
    if d is None:
        return '<span class="drift none">—</span>'
    status = d.status.value
    if short:
        text = (signed_percent(d.change_rel) if d.change_rel is not None and d.baseline is not None else
                {"new": "new", "not_measured": "—"}.get(status, status.replace("_", " ")))
        if status == "prediction_changed":
            text += f" ({changed_badge(d)})"
        return f'<span class="drift drift-{esc(status)}" title="{esc(d.text)}">{esc(text)}</span>'
    return f'<span class="drift drift-{esc(status)}">{esc(d.text)}</span>'


# ----------------------------------------------------------------------------------------------------------------
# the nights a chart cannot judge: the machine ran apart (host probe), or a point did not hold its concurrency
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Mark:
    """Why one night's value is not like the others (both "" for an ordinary night).

    ``machine``: drift's own sentence (:func:`~pytest_roofline.history.machine_moved`, the very note the drift line
    prints beside a move) where the night's host probe departs from drift's reference (the median probe of the same
    setup's latest earlier nights that measured it at a point that held its concurrency, once 3 did; the nearest
    other nights, earlier and later, where fewer did, which the sentence then says) by more than
    :data:`~pytest_roofline.history.MACHINE_SHIFT`;
    ``machine_short`` its few words for the tables. ``unheld``: the points behind the value that did not hold their
    concurrency (``StoredValue.unheld_points``), and its few words."""

    machine: str = ""
    machine_short: str = ""
    unheld: str = ""
    unheld_short: str = ""

    @property
    def texts(self) -> list[str]:
        return [t for t in (self.machine, self.unheld) if t]


def _night_marks(group: _Group, policy: DriftPolicy) -> dict[tuple[int, str], _Mark]:
    """Each measured value of ``group`` whose night drift would not judge as usual, by (run index, prediction key):
    a night measured at a point that did not hold its concurrency, and a night whose machine ran apart.

    "Ran apart" is drift's own rule and reference, worked out here directly rather than by asking :func:`drift_for`
    about each night (which judged only the nights it compared, and cost seconds on a long store): a value measured
    at a point that held its concurrency whose host probe departs by more than
    :data:`~pytest_roofline.history.MACHINE_SHIFT` (:func:`machine_apart`) from the median probe of the latest
    ``max(SPREAD_RUNS, window)`` earlier nights of its setup that measured it at a point that held and kept a probe
    (:func:`night_machine`'s reference, computed night by night with :func:`reference_probe`), once
    :data:`~pytest_roofline.history.MIN_NIGHTS` (3) such earlier nights give one: drift knows no machine before
    (nor the nights' spread). The mark says it in drift's sentence (:func:`machine_moved`). A night drift calls
    ``new`` is marked by the same rule: one whose every earlier night ran apart. A night with fewer than 3 earlier
    probes (one of the first three probed nights of its setup and value: the first night of a setup, or of a store
    that began keeping probes) is compared instead with the nearest as many other nights, its earlier ones and the
    nights after it (the first ``max(SPREAD_RUNS, window) + 1`` probed nights but itself), when 3 or more there are;
    its sentence says which. So a slow first night is marked, as a reader of the chart expects, and the nights just
    after it are not marked "faster" for being compared with it alone (drift's median of one or two earlier nights
    is those nights). A setup with fewer than 4 probed nights of the value has no night marked for its machine.
    Empty for a store without probes whose points all held: such a page is as before."""
    out: dict[tuple[int, str], _Mark] = {}
    for i, r in enumerate(group.runs):
        for v in r.values:
            if v.mode == "measured" and is_number(v.measured) and not v.held:
                many = len(v.unheld_points) > 1
                names = ", ".join(v.unheld_points)
                out[(i, v.key)] = _Mark(
                    unheld=(f"point{'s' if many else ''} {names} did not hold {'their' if many else 'its'} "
                            "concurrency this night: it measured a lower load than the prediction names, so drift "
                            "does not judge the value (see that night's verdict notes)"),
                    unheld_short=f"concurrency not held ({names})")
    # per setup and key, the nights that count for the machine's reference, in order (night_probe: drift's own
    # filter, a value measured at a point that held its concurrency with a probe)
    probed: dict[tuple[SetupKey, str], list[tuple[int, float]]] = {}
    for i, r in enumerate(group.runs):
        for v in r.values:
            p = night_probe(v)
            if p is not None:
                probed.setdefault((r.setup, v.key), []).append((i, p))
    limit = max(SPREAD_RUNS, policy.window)  # how many nights night_machine reads, as drift calls it
    for (_setup, key), seen in probed.items():
        probes = [p for _i, p in seen]
        for n, (i, probe) in enumerate(seen):
            if n >= MIN_NIGHTS:  # drift's own reference: the latest `limit` earlier nights
                reference = reference_probe(probes[max(0, n - limit):n])
                others = []
            else:  # drift knows no machine yet: the nearest `limit` other nights, its first ones but itself
                others = probes[:n] + probes[n + 1:limit + 1]
                if len(others) < MIN_NIGHTS:  # nor does the page: too few nights of the setup kept a probe
                    continue
                reference = reference_probe(others)
            if not machine_apart(probe, reference, MACHINE_SHIFT):
                continue
            sentence = machine_moved(probe, reference)
            short = _machine_short(sentence)
            if others:
                after = len(others) - n
                if n == 0:
                    sentence += (f"; compared with the {after} nights after it, since no earlier night of its setup "
                                 "measured it with a host probe")
                    short += f" (the {after} nights after it)"
                else:
                    sentence += (f"; compared with the {len(others)} nearest nights of its setup ({n} before it, "
                                 f"{after} after it), since fewer than {MIN_NIGHTS} earlier nights measured it with a "
                                 "host probe")
                    short += f" (the {len(others)} nearest nights)"
            out[(i, key)] = _Mark(machine=sentence, machine_short=short)
    return out


def _machine_short(sentence: str) -> str:
    """The few words the nights table shows for drift's machine sentence (``machine 40% slower: host probe 4.35
    vs 7.25 GFLOP/s``); the sentence's head where its form is not the one expected."""
    m = _MACHINE_WORDS.search(sentence)
    return f"machine {m[1]}: host probe {m[2]} vs {m[3]} GFLOP/s" if m else sentence.split(" (")[0]


#: drift's machine sentence (history's ``machine_moved``): "the machine itself ran 40% slower than on the other
#: nights (host probe 4.35 vs 7.25 GFLOP/s, beyond 20%): ..."
_MACHINE_WORDS = re.compile(r"ran (\d+% (?:slower|faster)) than .*?\(host probe ([\d.eE+-]+) vs ([\d.eE+-]+) GFLOP/s")


def _marks_row(m: _Mark) -> str:
    """A night's marks as the nights table writes them, in a row of their own under the night's, so the table keeps
    its width."""
    return f'<tr class="tmarks"><td colspan="8">{_mark_spans(m)}</td></tr>'


def _mark_spans(m: _Mark) -> str:
    """A night's marks in a few words each, the whole sentence on hover."""
    parts = []
    if m.machine:
        parts.append(f'<span class="tmark tmark-machine" title="{esc(m.machine)}">{esc(m.machine_short)}</span>')
    if m.unheld:
        parts.append(f'<span class="tmark tmark-unheld" title="{esc(m.unheld)}">{esc(m.unheld_short)}</span>')
    return " ".join(parts)


# ----------------------------------------------------------------------------------------------------------------
# numbers in the prediction's unit
# ----------------------------------------------------------------------------------------------------------------
def _display_unit(s: _Series, numbers: Sequence[float]) -> tuple[str, float]:
    """The unit the series is drawn in (the unit its latest night was written in, else the dimension's default)
    and its factor to SI; ``numbers``: the series' numbers in SI (:func:`_all_numbers`)."""
    v = s.latest
    unit = v.unit or DEFAULT_UNIT.get(v.dimension, "")
    if not v.unit and v.dimension == "bytes":
        biggest = max((abs(x) for x in numbers), default=0.0)
        unit = format_value(biggest, "bytes").split(" ")[-1] if biggest else "B"
    if not v.unit and v.dimension == "ratio" and shown_unit(v.dimension, v.unit, v.predicted_text) is None:
        unit = "%"
    try:
        return unit, unit_scale(v.dimension, unit)
    except UnitError:
        return "", 1.0


def _all_numbers(s: _Series) -> list[float]:
    out = []
    for v in s.values:
        if v is None:
            continue
        out += [float(x) for x in (v.measured, v.model, v.lo, v.hi, v.predicted) if is_number(x)]
        if is_number(v.measured):  # the whiskers of the measured value's interval stay on the chart
            out += [float(x) for x in (v.measured_lo, v.measured_hi) if is_number(x)]
    return out


def _fmt(v: StoredValue, si: float | None) -> str:
    """A value of ``v``'s quantity in the unit its prediction was written in (as the scorecard writes it)."""
    if si is None or not is_number(si):
        return "—"
    return _fmt_si(v.dimension, v.unit, float(si), v.predicted_text)


def _fmt_measured(v: StoredValue) -> str:
    """``v``'s measured value as :func:`_fmt` writes it, uncached: a measured number seldom repeats, and caching
    each would only push the repeating band and model values out of :func:`_fmt_si`'s cache."""
    return _fmt_value(v.dimension, v.unit, float(v.measured), v.predicted_text) if is_number(v.measured) else "—"


@functools.lru_cache(maxsize=4096)
def _fmt_si(dimension: str, unit: str, si: float, predicted_text: str = "") -> str:
    """:func:`_fmt_value`, cached: a band or a model value repeats night after night (500 nights × 100 predictions
    stay fast)."""
    return _fmt_value(dimension, unit, si, predicted_text)


def _fmt_value(dimension: str, unit: str, si: float, predicted_text: str = "") -> str:
    """A value in the unit its ink was written in; a ratio written as a bare number stays one."""
    shown = shown_unit(dimension, unit, predicted_text)
    if shown == "":  # a ratio written as a bare number (Little's law's 1.00) stays one
        return format_value(si, dimension, "", digits=4)
    return fmt_value(dimension, unit, si, digits=4)


def _band_text(v: StoredValue) -> str:
    return _band_text_of(v.dimension, v.unit, v.predicted_text, v.lo, v.hi)


@functools.lru_cache(maxsize=4096)
def _band_text_of(dimension: str, unit: str, predicted_text: str, lo_si: float | None, hi_si: float | None) -> str:
    """The ink with its band: ``1.00 [0.95, 1.05]``; a one-sided band as its bound (``0% (≤ 5 %)``), never an
    infinite end."""
    if lo_si is None and hi_si is None:
        return predicted_text or "—"
    lo = _fmt_si(dimension, unit, lo_si, predicted_text) if lo_si is not None else None
    hi = _fmt_si(dimension, unit, hi_si, predicted_text) if hi_si is not None else None
    band = f"[{lo}, {hi}]" if lo is not None and hi is not None else f"(≤ {hi})" if hi is not None else f"(≥ {lo})"
    return f"{predicted_text} {band}" if predicted_text else band


def _night(r: RunSummary, *, seconds: bool = False) -> str:
    """``2026-12-01 02:00`` (``2026-12-01 02:00:07`` with ``seconds``) from the run's ISO start (UTC)."""
    t = r.started_at.replace("T", " ").rstrip("Z")
    return t[:19] if seconds else t[:16]


def _commit(r: RunSummary) -> str:
    """The run's commit as the page writes it: a short sha (12 at most) and, for a checkout with uncommitted
    changes, its whole ``-dirty`` mark (``586b4ff-dirty``, never ``586b4ff-dirt``)."""
    text = (r.commit or "").strip()
    sha = text.removesuffix("-dirty")
    return (sha[:12] + text[len(sha):]) if sha else "no commit"


def _status_color(status: str) -> str:
    return OUTCOME_COLOR.get(_OUTCOME_OF_STATUS.get(status, "skipped"), PALETTE["grey"])


def _badge(status: str) -> str:
    o = _OUTCOME_OF_STATUS.get(status, "skipped")
    return f'<span class="rl-badge rl-{o}">{esc(_WORD.get(status) or OUTCOME_LABEL.get(o, status))}</span>'


def _shown_text(v: StoredValue) -> str:
    """A night's outcome in a tooltip: the stored pytest outcome with the verdict behind an xfail or an xpass
    (``xfail (verdict fail)``), or the verdict status of a night stored before outcomes were kept."""
    return f"{v.shown} (verdict {v.status})" if v.outcome and v.status and v.outcome != v.status else v.shown


# ----------------------------------------------------------------------------------------------------------------
# the chart
# ----------------------------------------------------------------------------------------------------------------
def _x_ticks(n: int, target: int = 5, min_gap: int = 1) -> list[float]:
    """The nights that get a tick label: about ``target`` of them, the first and the latest always, and never two
    closer than ``min_gap`` nights (labels that would overlap: :func:`_tick_gap`)."""
    if n <= 0:
        return []
    step = max(min_gap, 1 if n <= target else math.ceil((n - 1) / (target - 1)))
    ticks = list(range(0, n, step))
    gap = n - 1 - ticks[-1]
    if gap and gap >= min_gap and gap >= step / 2:
        ticks.append(n - 1)
    elif gap and len(ticks) > 1:
        ticks[-1] = n - 1  # the latest night's label instead of the one before it: still >= step from the rest
    elif gap:
        ticks = [0, n - 1] if n - 1 >= min_gap else [n - 1]
    return [float(t) for t in ticks]


def _tick_gap(n: int, texts: Sequence[str], plot_px: float) -> int:
    """The fewest nights between two labelled ticks for the widest label (``12-05 10:02``, 11 characters: about
    75 px at the axis' 11 px font) to clear its neighbour, on an axis ``plot_px`` wide that holds ``n`` nights."""
    if n <= 1 or not texts:
        return 1
    widest = max(len(t) for t in texts) * _TICK_CHAR_PX + _TICK_PAD_PX
    return max(1, math.ceil(widest / (plot_px / n)))


def _margin_right(one_year: bool) -> int:
    """The chart's right margin: room for half the last tick label (a year in it makes it longer)."""
    return 28 if one_year else 40


def _edge_pad(n: int, size: float, plot_px: float) -> float:
    """How far (in nights) the x axis reaches beyond the first and the latest night: half a night, or more where
    the nights are closer than a dot, so the latest point (a dot of radius ``size + 0.5`` and its whisker's cap)
    sits inside the plot rather than on its right edge (on a 406-night page a night is about 1.2 px wide)."""
    need = size + 2.0  # px from the dot's centre to the plot's edge: its radius, and a pixel and a half of room
    if n <= 1 or plot_px <= 2 * need:
        return 0.5
    return max(0.5, need * (n - 1) / (plot_px - 2 * need))


def _tick_format(ticks: Sequence[float]) -> Callable[[float], str]:
    """Tick labels with as many decimals as the step needs, so neighbouring ticks never read the same
    (511.5, 512, 512.5 B rather than 512, 512, 512); millions and up in the compact k/M/G style."""
    steps = [b - a for a, b in zip(ticks, ticks[1:]) if b > a]
    step = min(steps) if steps else 1.0
    if max((abs(t) for t in ticks), default=0.0) >= 1e6 and step >= 1e4:
        return lambda t: compact_number(t, 4)
    decimals = next((d for d in range(10) if all(abs(round(t, d) - t) < step * 1e-3 for t in ticks)), 10)
    return lambda t: f"{t:,.{decimals}f}"


def _spans(values: Sequence[StoredValue | None], get: Callable[[StoredValue], Any]) -> list[tuple[int, int, Any]]:
    """Maximal runs of nights ``a..b`` over which ``get(value)`` is the same (nights without a value split)."""
    out: list[tuple[int, int, Any]] = []
    for i, v in enumerate(values):
        if v is None:
            continue
        g = get(v)
        if out and out[-1][1] == i - 1 and out[-1][2] == g:
            out[-1] = (out[-1][0], i, g)
        else:
            out.append((i, i, g))
    return out


def _chart(group: _Group, s: _Series, marks: Mapping[tuple[int, str], _Mark] | None = None, *,
           width: int = _CHART_WIDTH, height: int = 230) -> str:
    """``s`` night by night, over the runs that ran its prediction file (:meth:`_Group.view`); ``marks``
    (:func:`_night_marks`) flag the nights drift would not judge as usual."""
    view = group.view(s)
    nights = view.nights
    n = len(view.runs)
    values = view.values(s)

    def at(i: int) -> StoredValue:  # a night inside a span always has a value
        v = values[i]
        assert v is not None
        return v
    numbers = _all_numbers(s)
    unit, scale = _display_unit(s, numbers)

    def d(x: float | None) -> float | None:
        return None if x is None or not is_number(x) else float(x) / scale

    nums = [x / scale for x in numbers]
    lo, hi = (min(nums), max(nums)) if nums else (0.0, 1.0)
    span = hi - lo
    if span <= 0:
        span = abs(hi) * 0.1 or 1.0
        lo, hi = lo - span / 2, hi + span / 2
        span = hi - lo
    lo, hi = lo - span * 0.12, hi + span * 0.12
    if nums and min(nums) >= 0 > lo:  # a quantity that cannot be negative: no negative axis
        lo = 0.0
    size = 3.6 if n <= 60 else (2.4 if n <= 150 else 1.7)
    pad = _edge_pad(n, size, width - _CHART_MARGIN_LEFT - _margin_right(nights.one_year))
    first, last = -pad, n - 1 + pad

    def lo_edge(a: int) -> float:  # where night a's place begins (the first reaches the plot's edge)
        return first if a == 0 else a - 0.5

    def hi_edge(b: int) -> float:
        return last if b == n - 1 else b + 0.5
    x_axis = Axis(first, last, ticks=nights.ticks, fmt=nights.tick_text, label=nights.axis_label)
    y_ticks = nice_ticks(lo, hi, 4)
    y_axis = Axis(lo, hi, ticks=y_ticks, label=unit, fmt=_tick_format(y_ticks))
    v0 = s.latest
    title = v0.prediction_id + (" · " + ", ".join(f"{k}={x}" for k, x in v0.at.items())
                                if v0.at and "[" not in v0.prediction_id else "")
    c = Chart(x_axis, y_axis, width=width, height=height, title=_clip(title, 70),
              margin_left=_CHART_MARGIN_LEFT, margin_right=_margin_right(nights.one_year),
              subtitle=f"{v0.quantity} — {v0.file}",
              description=f"{v0.quantity} of {v0.prediction_id}, {n} night{'s' if n != 1 else ''}")
    # the predicted band, stepping where the YAML changed; each step's tooltip: its band and its nights
    bands = [(a, b, lo_hi) for a, b, lo_hi in _spans(values, lambda v: (v.lo, v.hi)) if lo_hi != (None, None)]
    c.step_band([(lo_edge(a), hi_edge(b), d(lo_hi[0]), d(lo_hi[1])) for a, b, lo_hi in bands], color=_BAND_COLOR,
                label="predicted band",
                titles=[f"predicted {_band_text(at(b))} · {nights.span_text(a, b)}" for a, b, _ in bands])
    # the model's value, as a step line across the nights it was computed; each step's tooltip: value, nights
    model_pts: list[tuple[float, float]] = []
    model_tips: list[tuple[float, float, float, str]] = []
    for a, b, m in _spans(values, lambda v: v.model):
        if m is None or not is_number(m):
            model_pts.append((math.nan, math.nan))
            continue
        if model_pts and model_pts[-1][0] != lo_edge(a):
            model_pts.append((math.nan, math.nan))
        model_pts += [(lo_edge(a), float(m) / scale), (hi_edge(b), float(m) / scale)]
        model_tips.append((lo_edge(a), hi_edge(b), float(m) / scale, f"model {_fmt(at(b), m)} · "
                                                                f"{nights.span_text(a, b)}"))
    if model_tips:
        c.line(model_pts, color=_MODEL_COLOR, width=1.8, dash="5 3", label="model")
    # the nights whose machine ran apart (host probe): a shaded column behind each, under everything else drawn
    mark_of = ({j: m for j, i in enumerate(view.index) if (m := (marks or {}).get((i, s.key))) is not None}
               if marks else {})
    apart = [j for j, m in sorted(mark_of.items()) if m.machine]
    for k, j in enumerate(apart):
        c.vband(lo_edge(j), hi_edge(j), color=_MACHINE_COLOR, opacity=0.28,
                label="machine ran apart (host probe)" if k == 0 else None)
    # engine-version changes
    for i, version in nights.upgrades:
        c.vline(i - 0.5, color=_VERSION_COLOR, dash="3 3", width=1.4, text=f"vllm {_clip(version, 24)}")
    # workload changes: another figure starts there, as at a new version (trial s26a #12: only a table cell said so)
    reworked = _workload_changes(values)
    for i in reworked:
        c.vline(i - 0.5, color=_WORKLOAD_COLOR, dash="2 2", width=1.4, text="workload changed", text_pos=0.12)
    # the measured value, each night coloured by its verdict: one path per verdict, one tooltip per night
    measured = [(i, float(v.measured) / scale, v) for i, v in enumerate(values)
                if v is not None and is_number(v.measured)]
    tips: list[tuple[float, float, float, str]] = []
    if measured:
        if n <= 150:  # beyond that the nights are a pixel apart: the points alone read better than a zigzag
            ys = [math.nan] * n
            quantity = [""] * n
            for i, y, v in measured:
                ys[i], quantity[i] = y, v.quantity
            pts: list[tuple[float, float]] = []
            for i in range(n):
                # nights of another quantity under the same id are not joined to this one's (trial s24c M7), nor
                # nights of another workload (trial s26a #12)
                if pts and ((quantity[i] and quantity[i - 1] and quantity[i] != quantity[i - 1]) or i in reworked):
                    pts.append((i - 0.5, math.nan))
                pts.append((float(i), ys[i]))
            c.line(pts, color="#9aa3ad", width=1.2)
        # each measured point's confidence interval as a capped whisker under its dot, the caps wider than the dot
        # (a short interval still shows); an unbounded side is not drawn, a night that stored none has none
        whiskers: list[tuple[float, float | None, float, float | None]] = []
        for i, y, v in measured:
            if _has_interval(v):
                whiskers.append((float(i), d(v.measured_lo), y, d(v.measured_hi)))
        if whiskers:
            levels = {_level_text(v) for _, _, v in measured if _has_interval(v)}
            label = f"{levels.pop()} interval" if len(levels) == 1 else "interval"
            if len(whiskers) < len(measured):
                label += f" ({len(whiskers)} of {len(measured)} nights)"
            dot_r = size + 0.5  # a dot is a round cap of stroke width 2·size + 1
            cap = min(dot_r + 2.5, max(1.5, 0.45 * (c.px(1.0) - c.px(0.0))))  # never into the next night's
            c.whiskers(whiskers, color=_WHISKER_COLOR, width=1.5, cap=cap, label=label)
        by_status: dict[str, list[tuple[float, float]]] = {}
        for i, y, v in measured:
            by_status.setdefault(v.shown, []).append((float(i), y))
            ci = (f", {_level_text(v)} interval [{_fmt(v, v.measured_lo) if is_number(v.measured_lo) else '−∞'}, "
                  f"{_fmt(v, v.measured_hi) if is_number(v.measured_hi) else '+∞'}]" if _has_interval(v) else
                  ", no interval stored" if whiskers else "")
            why = "".join(f" · {t}" for t in mark_of[i].texts) if i in mark_of else ""
            if v.quantity and s.latest.quantity and v.quantity != s.latest.quantity:
                why += f" · this night measured {v.quantity}, not {s.latest.quantity}"
            tips.append((lo_edge(i), hi_edge(i), y,
                         f"{nights.heads[i]} — measured {_fmt_measured(v)}{ci}: {_shown_text(v)}{why}"))
        for status in _DOT_ORDER:
            if status in by_status:
                c.dots(by_status.pop(status), color=_status_color(status), size=size,
                       label=f"measured · {_WORD.get(status) or OUTCOME_LABEL.get(_OUTCOME_OF_STATUS[status], status)}",
                       css_class=f"rl-pt rl-pt-{status}")
        for status, p in by_status.items():  # a status this page does not know: grey
            c.dots(p, color=PALETTE["grey"], size=size, label=f"measured · {status}", css_class="rl-pt")
        # a night measured at a point that did not hold its concurrency: a ring around its dot
        unheld = [(float(i), y) for i, y, _v in measured if i in mark_of and mark_of[i].unheld]
        if unheld:
            c.markers(unheld, color=_UNHELD_COLOR, size=size + 2.6, ring=True, css_class="rl-unheld",
                      label="concurrency not held")
    # hover targets above everything: the model's steps, then each night's point (which wins where they meet)
    c.hover(model_tips, thickness=6)
    c.hover(tips, thickness=2 * size + 8, max_width=2 * size + 8)
    return c.render()


def _has_interval(v: StoredValue) -> bool:
    """Whether night ``v`` stored a confidence interval with at least one bound (what a whisker draws)."""
    return bool(v.interval_method) and (is_number(v.measured_lo) or is_number(v.measured_hi))


def _level_text(v: StoredValue) -> str:
    """The interval's confidence level, ``95 %`` (the measurements' level where a run did not store its own)."""
    level = v.interval_level
    if level is None or not is_number(level) or not 0 < float(level) < 100:
        return "95 %"
    pct = float(level) * 100 if float(level) < 1 else float(level)
    return f"{pct:g} %"


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# ----------------------------------------------------------------------------------------------------------------
# the page
# ----------------------------------------------------------------------------------------------------------------
def _anchor(gi: int, key: str) -> str:
    return f"t{gi}-" + hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _nights_table(group: _Group, s: _Series, drifts: Mapping[int, Mapping[str, Drift]],
                  marks: Mapping[tuple[int, str], _Mark] | None = None) -> str:
    view = group.view(s)
    rows = []
    shown = 0
    for j in range(len(view.index) - 1, -1, -1):
        i = view.index[j]
        v = s.values[i]
        if v is None:
            continue
        if shown >= TABLE_NIGHTS:
            break
        r = group.runs[i]
        drift = _drift_html(drifts[i].get(s.key), short=True) if i in drifts else ""
        # a night that measured another quantity under the same id says which (trial s24c M7: the table listed
        # output_throughput's 530.7 tok/s under total_throughput)
        other = (f' <span class="other-q">({esc(v.quantity)})</span>'
                 if v.quantity and s.latest.quantity and v.quantity != s.latest.quantity else "")
        rows.append(f"<tr><td>{esc(view.nights.when(j))}</td><td><code>{esc(_commit(r))}</code></td>"
                    f"<td>{esc(r.setup.engine_version)}</td><td>{_badge(v.shown)}</td>"
                    f'<td class="num">{esc(_fmt(v, v.measured))}{other}</td>'
                    f'<td class="num model">{esc(_fmt(v, v.model))}'
                    f'</td><td class="num">{esc(_band_text(v))}</td><td>{drift}</td></tr>')
        if marks and (mark := marks.get((i, s.key))) is not None:
            rows.append(_marks_row(mark))
        shown += 1
    total = sum(v is not None for v in s.values)
    head = ("<tr><th>night (UTC)</th><th>commit</th><th>vllm</th><th>status</th><th>measured</th><th>model</th>"
            "<th>predicted</th><th>drift</th></tr>")
    more = f'<p class="more">latest {shown} of {total} nights</p>' if total > shown else ""
    return f'<table class="nights">{head}{"".join(rows)}</table>{more}'


def _last_index(s: _Series) -> int:
    """The group index of the latest run that holds a value of ``s``."""
    return max(i for i, x in enumerate(s.values) if x is not None)


def _summary_table(gi: int, group: _Group, drifts: Mapping[int, Mapping[str, Drift]], baseline_words: str,
                   marks: Mapping[tuple[int, str], _Mark] | None = None) -> str:
    rows = []
    for s in group.series:
        v = s.latest
        last = group.view(s).last  # the latest run that ran the prediction's file
        stale = s.values[last] is None  # its file ran later without it: removed (or renamed) from the file
        # ... or the file still held it, and that run left it out (-k, -m): the run kept its key
        left_out = stale and s.key in group.runs[last].unchecked
        value = v.measured if is_number(v.measured) else v.model
        which = "measured" if is_number(v.measured) else "model"
        drift = (f'<span class="drift none">not checked in the latest run of its file (left out by -k or -m); '
                 f'latest value from {esc(_night(group.runs[_last_index(s)]))} UTC</span>' if left_out else
                 '<span class="drift none">not in the latest run of its file</span>' if stale else
                 '<span class="drift none">— (a math check: only measured values drift)</span>'
                 if v.mode != "measured" else _drift_html(drifts.get(last, {}).get(s.key)))
        if marks and not stale and (mark := marks.get((last, s.key))) is not None:
            drift += " " + _mark_spans(mark)  # the latest night's marks, as its table's row says them
        nights = sum(x is not None for x in s.values)
        measured_nights = sum(x is not None and is_number(x.measured) for x in s.values)
        at = ", ".join(f"{k}={x}" for k, x in v.at.items())
        rows.append(f'<tr class="st-{esc(v.shown)}"><td class="pid"><a href="#{_anchor(gi, s.key)}">'
                    f"{id_html(v.prediction_id)}</a></td><td class=\"file\">{esc(v.file)}</td>"
                    f"<td>{esc(v.quantity)}" + (f' <span class="at">at {esc(at)}</span>' if at else "") + "</td>"
                    f"<td>{_badge(v.shown)}</td><td class=\"num\">{esc(_fmt(v, value))}"
                    f' <span class="which">{which}</span></td><td>{drift}</td>'
                    f'<td class="num">{nights}' + (f" ({measured_nights} measured)" if measured_nights not in
                                                   (0, nights) else "") + "</td></tr>")
    head = ("<tr><th>prediction</th><th>file</th><th>quantity</th>"
            '<th title="in the latest run of its prediction file">latest</th><th>latest value</th>'
            f"<th>drift vs {esc(baseline_words)}</th>"
            '<th title="the runs of its prediction file that checked it">nights</th></tr>')
    return f'<div class="scroll"><table class="summary">{head}{"".join(rows)}</table></div>'


def _group_section(gi: int, group: _Group, policy: DriftPolicy,
                   marks: Mapping[tuple[int, str], _Mark] | None = None, *, own: bool = False) -> str:
    versions = group.versions
    ver = " → ".join(f"vllm {v}" for v in versions[-6:]) + (" (and earlier)" if len(versions) > 6 else "")
    drifts = _night_drifts(group, policy, own=own)
    group.series = _attention_order(group, drifts)
    latest = group.latest_of_files()
    counts: dict[str, int] = {}  # the outcomes of each file's latest run, as its terminal counted them
    for f, i in latest:
        for v in group.runs[i].values:
            if v.file == f:
                counts[v.shown] = counts.get(v.shown, 0) + 1
    pills = " ".join(f"{_badge(st)} {n}" for st, n in sorted(counts.items(), key=lambda kv: _rank(kv[0])))
    nights, runs = group.nights, len(group.runs)
    span = (f"{nights} night{'s' if nights != 1 else ''}"
            + (f" ({runs} runs of {len(latest)} prediction files; a night is one run of a file)"
               if runs != nights else "")
            + f" from {esc(_night(group.runs[0]))} to {esc(_night(group.runs[-1]))} UTC")
    last_runs = sorted({i for _f, i in latest}) or [len(group.runs) - 1]  # runs that hold no value: the last
    if len(last_runs) == 1:
        last = group.runs[last_runs[0]]
        label = f", {esc(last.label)}" if last.label else ""
        where = f"latest run <code>{esc(last.run_id)}</code> ({esc(_commit(last))}{label})"
    else:
        first, newest = group.runs[last_runs[0]], group.runs[last_runs[-1]]
        where = (f"latest: each file's latest run, {esc(_night(first))} to {esc(_night(newest))} UTC (the newest "
                 f"<code>{esc(newest.run_id)}</code>, {esc(_commit(newest))})")
    parts = [f'<section class="setup" id="g{gi}"><h2 class="spec-title">{esc(group.hardware)} · '
             f"{esc(group.model)}</h2>"
             f'<div class="meta">{esc(ver)} · {span} · {where} · {pills}</div>',
             _summary_table(gi, group, drifts, _baseline_words(policy), marks),
             '<div class="trends">']
    for s in group.series:
        parts.append(f'<figure class="chart trend" id="{_anchor(gi, s.key)}">'
                     f'<div class="tchart">{_chart(group, s, marks)}</div>'
                     f'<div class="ttable">{_nights_table(group, s, drifts, marks)}</div></figure>')
    parts.append("</div></section>")
    return "".join(parts)


def _attention_order(group: _Group, drifts: Mapping[int, Mapping[str, Drift]]) -> list[_Series]:
    """What a reader looks for in the morning first: predictions that failed (or passed unexpectedly) in their
    file's latest run, then those whose number moved there (drifted, or the ink changed), then those that failed
    on an earlier night shown; each in file order. An expected miss (xfail) is not a failure."""
    def rank(s: _Series) -> int:
        last = group.view(s).last
        now = s.values[last]
        if now is not None and now.shown in _ATTENTION:
            return 0
        d = drifts.get(last, {}).get(s.key)
        if now is not None and d is not None and d.status.value in ("drifted", "prediction_changed"):
            return 1
        if any(v is not None and v.shown in _ATTENTION for v in s.values):
            return 2
        return 3

    return sorted(group.series, key=rank)  # stable: file order within a rank


def _baseline_words(policy: DriftPolicy) -> str:
    if policy.pinned is not None:
        return f"run {policy.pinned}"
    return "previous night" if policy.window == 1 else f"median of {policy.window} nights"


#: what a night shows that a reader must look at: a failure, an error, an unexpected pass (XPASS)
_ATTENTION = ("fail", "error", "xpass", "drifted")


def _rank(status: str) -> int:
    """The pills' order: the reports' listing order, worst first (common.OUTCOMES)."""
    order = ("error", "fail", "drifted", "xpass", "inconclusive", "xfail", "skip", "pass")
    return order.index(status) if status in order else len(order)


def _run_policy(run: RunSummary, fallback: DriftPolicy) -> DriftPolicy:
    """The drift policy ``run`` was judged under (``RunSummary.drift_threshold`` / ``drift_baseline``), ``fallback``
    filling what it did not store (a run stored before they were kept, or outside pytest)."""
    if not (run.drift_threshold or run.drift_baseline):
        return fallback
    try:
        return DriftPolicy(run.drift_threshold or fallback.threshold_text, run.drift_baseline or fallback.baseline,
                           fallback.machine)
    except ValueError:  # a stored policy this version does not read (a hand-edited index)
        return fallback


def _group_policy(group: _Group, drift: str | None, baseline: str | None) -> DriftPolicy:
    """The drift policy of a setup's columns: ``drift`` / ``baseline`` where given, else what its latest night was
    judged under (``RunSummary.drift_threshold`` / ``drift_baseline``, so the page agrees with that night's log:
    trial s24 M4), else the defaults."""
    stored = next((r for r in reversed(group.runs) if r.drift_threshold or r.drift_baseline), None)
    try:
        return DriftPolicy(drift or (stored.drift_threshold if stored else "") or DEFAULT_DRIFT,
                           baseline or (stored.drift_baseline if stored else "") or DEFAULT_BASELINE)
    except ValueError:  # a stored policy this version does not read (a hand-edited index): the defaults
        return DriftPolicy(drift or DEFAULT_DRIFT, baseline or DEFAULT_BASELINE)


def render_trend(runs: Sequence[RunSummary], *, title: str | None = None, source: str = "",
                 drift: str | None = None, baseline: str | None = None, generated_at: str | None = None) -> str:
    """The trend page for ``runs`` (any order; :func:`select_runs` filters them). ``source`` names the store in
    the header (credentials masked); ``drift`` and ``baseline`` are the drift policy of the drift columns, as
    ``--roofline-drift`` and ``--roofline-drift-baseline`` take them (a prediction's own ``drift:`` wins); where
    not given, each setup's latest night's own (:func:`_group_policy`)."""
    runs = sorted(runs, key=lambda r: (r.started_at, r.run_id))
    generated_at = generated_at or _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    page_title = title or "pytest-roofline trend"
    groups = _groups(runs)
    policies = [_group_policy(g, drift, baseline) for g in groups]
    policy = policies[0] if policies else DriftPolicy(drift or DEFAULT_DRIFT, baseline or DEFAULT_BASELINE)
    one_policy = len({(p.threshold_text, p.baseline) for p in policies}) <= 1
    marks = [_night_marks(g, p) for g, p in zip(groups, policies, strict=True)]  # none: as before marks were drawn
    nav = ""
    if len(groups) > 1:
        nav = '<nav class="files">' + " · ".join(f'<a href="#g{i}">{esc(g.hardware)} · {esc(g.model)}</a>'
                                                 for i, g in enumerate(groups)) + "</nav>"
    src = f'<div class="src">history: <code>{esc(redact.redact_text(source))}</code></div>' if source else ""
    sec = len(runs) > 1 and _night(runs[0]) == _night(runs[-1])  # all in one minute: its seconds
    span = (f"{len(runs)} run{'s' if len(runs) != 1 else ''} from {esc(_night(runs[0], seconds=sec))} to "
            f"{esc(_night(runs[-1], seconds=sec))} UTC" if runs else "no runs stored yet")
    hint = ('<p class="hint">Each chart: the measured value night by night (points coloured by that night\'s '
            "outcome as pytest reported it: an expected miss is xfail, not FAIL), the predicted band shaded, the "
            "model's value dashed. A purple rule marks a new vLLM version, an orange one a workload change. "
            + (f"Drift: a measured value against {esc(policy.describe())} of the same setup (hardware, model, engine "
               f"version), beyond {esc(policy.threshold_text)} unless the prediction sets its own drift: threshold"
               if one_policy else
               "Drift: a measured value against the baseline each setup's table names, of the same setup (hardware, "
               "model, engine version), beyond its threshold unless the prediction sets its own drift: threshold")
            + (" (the policy its latest night was judged under; each night's drift cells, the one its own log "
               "judged it by; roofline history --baseline and --drift set another)"
               if not (drift or baseline) and any(r.drift_threshold or r.drift_baseline for r in runs) else "")
            + '. The drift cells: <span class="drift drift-drifted">drifted</span> (beyond the threshold and the '
            'noise), <span class="drift drift-uncertain">uncertain</span> (beyond the threshold, within the noise or '
            'before three earlier nights), <span class="drift drift-steady">steady</span> (within the threshold); '
            "hover one for its baseline and why. Hover a point "
            "for its date, commit and version; the band or the model line for its value and nights. A prediction's "
            "latest status, value and drift are those of the latest run of its prediction file: a nightly that runs "
            "each file in its own pytest session stores one run per file. A night is one run of a prediction "
            "file; a chart has a place for each run of its file, evenly spaced: its x axis is the runs in order, "
            "not a time scale (a week without a run is one step, as is an hour between two)."
            + (" " + _MARKS_HINT if any(marks) else "") + "</p>")  # only where a night is marked
    head = (f'<header class="top"><div class="brand">pytest-roofline trend</div><h1>{esc(page_title)}</h1>'
            f'{src}<div class="src">{span}</div>{nav}{hint}</header>')
    own = drift is None and baseline is None  # each night judged as its own log judged it (trial s26a #6)
    body = head + ("".join(_group_section(i, g, p, m, own=own) for i, (g, p, m) in enumerate(zip(groups, policies,
                                                                                               marks)))
                   or
                   '<p class="missing">The store holds no runs yet: run pytest with --roofline-history.</p>')
    body += (f"<footer>Generated {esc(generated_at)} by pytest-roofline. This page is self-contained: no scripts, "
             "no fonts, no requests.</footer>")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="color-scheme" content="light dark">'
            f'<meta name="generator" content="pytest-roofline">'
            f"<title>{esc(page_title)}</title><style>{PAGE_CSS}{EXPLAIN_CSS}{TREND_CSS}"
            f"{TREND_MARKS_CSS if any(marks) else ''}</style></head>"
            f'<body><main class="page">{body}</main></body></html>\n')


def write_trend(store: HistoryStore, path: Path | str, *, setup: Sequence[str] = (), last: int | None = None,
                drift: str | None = None, baseline: str | None = None,
                title: str | None = None) -> tuple[Path, int]:
    """Render ``store``'s index (filtered as :func:`select_runs` does) and write it atomically to ``path``;
    returns the path and the number of runs drawn."""
    runs = select_runs(store.runs(), setup=setup, last=last)
    html = redact.redact_known(render_trend(runs, title=title, source=store.uri, drift=drift, baseline=baseline))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".trend-", suffix=".html", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(html)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; the page is an artefact for people, like the scorecard
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path, len(runs)


#: the style sheet, package data (report/static/trend.css)
TREND_CSS = css("trend")
#: the marks' style (report/static/trend-marks.css), on a page only where a night is marked
TREND_MARKS_CSS = css("trend-marks")
#: the hint's sentence on the marks, on a page only where a night is marked
_MARKS_HINT = ("A yellow column behind a night: its machine ran apart from the earlier nights of its setup (the "
               "first three nights with a probe: from the nearest nights, later ones too), its host probe "
               f"{1 + MACHINE_SHIFT:g} times theirs or more, or that much below (drift's machine rule; "
               "drift notes it too), so its dip or rise may be the machine's, not the engine's. A ring around a "
               "point: that night's point did not hold its concurrency (it measured a lower load), and drift does "
               "not judge it. Hover the point, or see the nights table, for the numbers.")
