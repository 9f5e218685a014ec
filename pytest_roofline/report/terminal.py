"""The table printed at the end of a pytest run, and the one-line form of a verdict.

The table fits the terminal's width (80 columns in a typical CI log) without making two rows look the same:
the columns are sized to what they hold, a number is never cut, each row shows the tolerance it was checked
with, the columns a reader can do without (the two models' values, then the quantity) give way first, and an id
too long for its column loses its middle, never its end, so ``littles-law[concurrency=16]`` and
``littles-law[concurrency=1]`` stay two different rows. A serving value's band sits beside it where it fits, else
on a line of its own under its row: no width leaves it out; the line saying what the ``[lo–hi]`` brackets are follows
a table that shows one, and only such a table. An INCONCLUSIVE or SKIP row's reason is under the table, one line
each (one prediction's points whose reasons differ only in the point on one line naming them, skips with the same
reason shown once, counted), as pytest's ``-r`` summary is: clipped to the width, whole at ``-vv``. An id that
another file of the session also has is qualified by its file's name, ``day3.yaml::batch1-throughput``, in the rows
and the reasons.
``-q`` shortens the table to the rows that failed and the count; ``-qq`` prints the count alone.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_roofline.model.bands import BAND_MEANING, CPU_BAND_CAVEAT, NOMINAL_COVERAGE
from pytest_roofline.scoring import Verdict, VerdictMode, VerdictStatus

__all__ = ["summary_table", "failure_line", "elide_ids", "drift_lines", "wrap_count", "reason_lines", "qualified_ids",
           "OUTCOME_WORD", "FAILING_WORDS", "INCONCLUSIVE_WORD"]

OUTCOME_WORD = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP", "xfailed": "XFAIL", "xpassed": "XPASS",
                "error": "ERROR"}
#: the verdict word of a prediction that passed its tolerance but failed the test under --roofline-drift-fail (its
#: measured value drifted from the baseline): a FAIL that would read as the prediction's own is this instead
DRIFT_FAIL_WORD = "DRIFTED"
#: the rows ``-q`` keeps: what a reader has to act on (an inconclusive verdict needs more requests)
FAILING_WORDS = ("FAIL", "ERROR", "XPASS", "INCONCLUSIVE", DRIFT_FAIL_WORD)
#: the verdict word of a prediction whose measured interval straddles its tolerance boundary, whatever pytest
#: outcome --roofline-inconclusive gave it
INCONCLUSIVE_WORD = "INCONCLUSIVE"

#: the most lines the skips' reasons take below -vv (an INCONCLUSIVE row's reason is never left out)
MAX_SKIP_LINES = 10

#: the narrowest an elided id may become (below it the table overflows rather than hide which row is which)
MIN_ID_WIDTH = 12
#: the fewest characters of a file's name a qualified id keeps where the name gives way (``day3…::knee``)
MIN_QUALIFIER_WIDTH = 4
#: the narrowest quantity column worth showing
MIN_QUANTITY_WIDTH = 8


def _outcome(report: Any) -> str:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.when == "setup" and report.failed:
        return "error"
    return str(report.outcome)


def _failed_by_drift(report: Any, v: Verdict) -> bool:
    """Whether the test failed for drifting (--roofline-drift-fail) while its prediction passed: a failed test
    whose verdict is PASS and whose drift is "drifted", not a strict XPASS (which fails a passing verdict too)."""
    drift = getattr(report, "roofline_drift", None) or {}
    return (_outcome(report) == "failed" and v.status is VerdictStatus.PASS and drift.get("status") == "drifted"
            and not str(getattr(report, "longrepr", "") or "").startswith("[XPASS(strict)]"))


def _plain(text: Any) -> str:
    return " ".join(str(text or "").split()).replace(" FLOP/byte", " FLOP/B")


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def _short(text: str) -> str:
    """A model value for the roofline/serving columns, its unit kept ('2,666.9 tok/s' beside a measured
    '2,504.6 tok/s'); "" for the note a model that could not compute leaves ('(model: ...)')."""
    text = _plain(text)
    return "" if not text or text.startswith("(") else text


def _number_only(text: str) -> str:
    head = text.split(" ")[0]
    return head if any(ch.isdigit() for ch in head) else text


def _band_numbers(v: Verdict, lo: float, hi: float) -> str:
    """A band's bounds without the unit the column beside it already says (9.4 ms and 14.4 ms -> '9.4–14.4'); bounds
    written in two units keep them (900 ms and 1.2 s -> '900 ms–1.2 s', never '900–1.2')."""
    a, b = _plain(v.fmt(lo)), _plain(v.fmt(hi))
    (num_a, _, unit_a), (num_b, _, unit_b) = a.partition(" "), b.partition(" ")
    return f"{num_a}–{num_b}" if unit_a == unit_b else f"{a}–{b}"


def _band_short(v: Verdict) -> str:
    """The serving band beside the serving value, from its bounds (``serving_band_lo``/``hi``), without the unit
    the value already says ('9.4–14.4'); "" where the value has no band."""
    if v.serving_band_lo is None or v.serving_band_hi is None:
        return ""
    return _band_numbers(v, v.serving_band_lo, v.serving_band_hi)


def _tolerance_short(v: Verdict) -> str:
    """The tolerance the verdict was checked with, without where it came from ('±0.5 ms (precision written)'
    -> '±0.5 ms'): beside the error it says why a -0.93% passes and a +361.73% too (``>= 100 ms``). A band that
    decided (:attr:`Verdict.band_check`) shows its bounds and its coverage and no more ('band 1,415.1–2,001.3 (80%)'
    for a serving band; 'band 120.01–206.64 (80% floor, top: ceiling)' for a batch-1 band whose top is the roofline
    ceiling; 'band 30.848–53.13 (measured share of the ceiling)'): the unit is the predicted column's, the row's
    src (serv) and the legend under the table say whose band it is, and the failure line has the rest."""
    band = v.band_check
    if band is not None:
        what = ("measured share of the ceiling" if band.source == "ceiling_share"
                else f"{band.level:.0%} floor, top: ceiling" if band.top_is_ceiling and band.level is not None
                else f"{band.level:.0%}" if band.level is not None else "")
        return f"band {_band_numbers(v, band.lo, band.hi)}" + (f" ({what})" if what else "")
    return _plain(v.tolerance_text).split(" (", 1)[0]


def _band_decided(v: Verdict) -> bool:
    """Whether the serving model's band decided a math verdict (``scoring._against_band``): its value, not the
    roofline's, is what the error is taken against, so it is the value the row shows."""
    return v.serving_checked and bool(v.serving_text)


def _error_message(reason: str) -> str:
    """The first line of an error without its ``file:line:`` prefix (the id already says which prediction)."""
    first = reason.strip().splitlines()[0] if reason.strip() else reason
    head, sep, rest = first.partition(": ")
    return rest if sep and ":" in head and head.rsplit(":", 1)[-1].isdigit() else first


def _elide_one(pid: str, width: int, head: int) -> str:
    if len(pid) <= width:
        return pid
    head = max(1, min(head, width - 2))
    return pid[:head] + "…" + pid[len(pid) - (width - 1 - head):]


def elide_ids(ids: Sequence[str], width: int) -> dict[str, str | None]:
    """Each id shortened to ``width`` characters by cutting its middle (the end tells parametrized ids apart:
    the tail of ``littles-law[concurrency=16]`` survives), the cut chosen so that no two different ids read the
    same. Where no cut keeps them apart (``sweep[batch=128:output_throughput]`` and ``…256…`` differ only in
    the middle), an id too long for the column maps to None: the table then prints it whole on a line of its
    own (a wrapped row beats an ambiguous one)."""
    unique = list(dict.fromkeys(ids))
    if width >= max((len(i) for i in unique), default=0):
        return {i: i for i in unique}

    def preferred(pid: str) -> int:  # keep the name before any '[' when it fits in half the column
        base = pid.split("[", 1)[0]
        return min(len(base), max(4, (width - 1) // 2 - 1))

    out: dict[str, str | None] = {i: (i if len(i) <= width else None) for i in unique}
    taken = {i for i in unique if len(i) <= width}
    pending = [i for i in unique if len(i) > width]
    # an id qualified by its file (``cpu-kv-pressure.yaml::kv-blocks``, :func:`qualified_ids`): the file's name gives
    # way first, its head kept (``cpu-kv-pr…::kv-blocks``), so the id itself stays whole where that tells them apart
    cut = {i: f"{i.split('::', 1)[0][:keep]}…::{i.split('::', 1)[1]}" for i in pending if "::" in i
           for keep in [width - len(i.split("::", 1)[1]) - len("…::")] if keep >= MIN_QUALIFIER_WIDTH}
    seen = Counter(cut.values())
    for i in [i for i in pending if i in cut and seen[cut[i]] == 1 and cut[i] not in taken]:
        out[i] = cut[i]
        taken.add(cut[i])
        pending.remove(i)
    shift = 0
    while pending and width >= MIN_ID_WIDTH and shift < width:  # the preferred cut, then longer tails
        cut = {i: _elide_one(i, width, preferred(i) - shift) for i in pending}
        seen = Counter(cut.values())
        for i in [i for i in pending if seen[cut[i]] == 1 and cut[i] not in taken]:
            out[i] = cut[i]
            taken.add(cut[i])
            pending.remove(i)
        shift += 1
    return out


def failure_line(v: Verdict) -> str:
    """A verdict in one line (``--tb=line``, the short summary, JUnit's failure message): the id, the verdict,
    the value in ink against what it was checked with, the error and the tolerance applied."""
    status = v.status.value.upper()
    if v.status is VerdictStatus.ERROR:
        return f"{v.id}: ERROR {_error_message(v.reason)}"
    measured = v.mode is VerdictMode.MEASURED
    banded = not measured and _band_decided(v)
    what = "measured" if measured else ("serving model" if banded else "model")
    got = v.measured_text if measured else (v.serving_text if banded else v.model_text)
    parts = [f"{v.id}: {status} {v.quantity} predicted {_plain(v.predicted_text) or '—'}",
             f"{what} {_plain(got) or '—'}"]
    tail = []
    if v.error_text:
        tail.append(f"error {_plain(v.error_text).split(' (')[0]}")
    if v.tolerance_text:
        tail.append(f"tolerance {_plain(v.tolerance_text)}")
    if v.interval_text and v.status is VerdictStatus.INCONCLUSIVE:
        tail.append(f"interval {_plain(v.interval_text)}")
        more = v.requests_to_decide
        tail.append(f"~{more} more requests would decide it" if more is not None else "more requests may not decide")
    return ", ".join(parts) + (f" ({'; '.join(tail)})" if tail else "")


_COLUMNS = ("id", "quantity", "predicted", "measured/model", "src", "roofline", "serving", "error", "tolerance",
            "verdict")
_RIGHT = {"predicted", "measured/model", "roofline", "serving", "error"}


def _file_of(report: Any) -> str:
    """The prediction file a report's test was collected from, as its node id says it
    (``predictions/day3.yaml::batch1-throughput`` -> ``predictions/day3.yaml``); "" where it has none."""
    nodeid = str(getattr(report, "nodeid", "") or "")
    return nodeid.split("::", 1)[0] if "::" in nodeid else ""


def _short_names(files: Iterable[str]) -> dict[str, str]:
    """Each file by its shortest name no other file of ``files`` ends with: its own name, else as many of its
    folders as tell it apart (``a/day3.yaml`` beside ``b/day3.yaml``)."""
    parts = {f: tuple(p for p in f.replace("\\", "/").split("/") if p) for f in files}
    out: dict[str, str] = {}
    for f, mine in parts.items():
        out[f] = f
        for k in range(1, len(mine) + 1):
            if all(theirs[-k:] != mine[-k:] for g, theirs in parts.items() if g != f):
                out[f] = "/".join(mine[-k:])
                break
    return out


def qualified_ids(ids: Sequence[tuple[str, str]]) -> list[str]:
    """Each (prediction id, its file) as the table and the reasons name it: the id alone, unless another file of
    the session has a prediction of the same id (two files may each have ``batch1-throughput``): then the id
    qualified by its file's shortest unambiguous name, ``day3.yaml::batch1-throughput``, as pytest's node ids are.
    Only the ids that collide are qualified; a session of one file reads as it always did."""
    files: dict[str, set[str]] = {}
    for pid, f in ids:
        if f:
            files.setdefault(pid, set()).add(f)
    clash = {pid for pid, fs in files.items() if len(fs) > 1}
    if not clash:
        return [pid for pid, _f in ids]
    short = _short_names(dict.fromkeys(f for _pid, f in ids if f))
    return [f"{short[f]}::{pid}" if pid in clash and f else pid for pid, f in ids]


def summary_table(reports: Iterable[Any], width: int = 100, verbosity: int = 0) -> list[str]:
    """The table: one line per prediction (id, quantity, predicted, measured or model value, its source, both
    models' values where they exist, error, verdict), then the counts. ``verbosity`` is pytest's: -1 (``-q``)
    keeps the FAIL/ERROR/XPASS rows and the counts, -2 (``-qq``) the counts alone. A report's file is its
    ``nodeid``'s (:func:`qualified_ids`: an id two files have says whose it is)."""
    rows: list[dict[str, str]] = []
    cpu_band = False
    reports = list(reports)
    verdicts = [Verdict.from_dict(r.roofline) for r in reports]  # the dict form a pytest report carries (xdist too)
    names = qualified_ids([(v.id, _file_of(r)) for r, v in zip(reports, verdicts, strict=True)])
    for r, v, name in zip(reports, verdicts, names, strict=True):
        cpu_band = cpu_band or CPU_BAND_CAVEAT in v.serving_band_text
        measured = v.mode is VerdictMode.MEASURED
        banded = not measured and _band_decided(v)  # the serving model's value decided: it is the one shown
        got = v.measured_text if measured else (v.serving_text if banded else v.model_text)
        src = "meas" if measured else ("serv" if v.model_source == "serving" or banded else "model")
        roof = v.roofline_text or (v.model_text if v.model_source == "roofline" else "")
        quantity = v.quantity
        if v.status is VerdictStatus.ERROR and quantity in ("", "?"):  # an invalid prediction: what is wrong
            quantity = _error_message(v.reason or "invalid prediction")
            src = ""
        rows.append({
            "id": name, "quantity": _plain(quantity), "predicted": _plain(v.predicted_text),
            "measured/model": _plain(got) or "—", "src": src, "roofline": _short(roof),
            "serving": _short(v.serving_text),
            "serving_band": f" [{_band_short(v)}]" if v.serving_band_range and _band_short(v) else "",
            "error": v.error_text.split(" (")[0] or ("" if v.status is not VerdictStatus.SKIP else "—"),
            "tolerance": _tolerance_short(v),
            "verdict": INCONCLUSIVE_WORD if v.status is VerdictStatus.INCONCLUSIVE and not hasattr(r, "wasxfail")
            else DRIFT_FAIL_WORD if _failed_by_drift(r, v)
            else OUTCOME_WORD.get(_outcome(r), _outcome(r).upper()),
            "reason": _plain(v.reason),
        })
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    count_line = ", ".join(f"{n} {k.lower()}" for k, n in sorted(counts.items()))
    if verbosity <= -2:
        return [f"roofline predictions: {count_line}"]
    if verbosity == -1:
        rows = [row for row in rows if row["verdict"] in FAILING_WORDS]
        if not rows:
            return [count_line]
    bare = any(row["serving"] and not row.get("serving_band") for row in rows)  # a serving value with no band
    # the legend explains the [lo–hi] brackets: only under a table that shows one (a table whose serving values
    # all have no band, `none` or a bandless value, has nothing for it to explain)
    legend = (textwrap.wrap(band_legend(cpu=cpu_band, bare=bare), max(width, 40), break_on_hyphens=False)
              if any(row.get("serving_band") and row["serving"] for row in rows) else [])
    return _layout(rows, width) + legend + reason_lines(rows, width, verbosity) + [count_line]


def reason_lines(rows: Sequence[Mapping[str, str]], width: int, verbosity: int = 0) -> list[str]:
    """Why each INCONCLUSIVE and SKIP row is what it is (neither row says it; a FAIL's failure report and an ERROR's
    message in the quantity column do), under the table, as pytest's ``-r`` summary says it:
    ``INCONCLUSIVE gp: measured 809.83 tok/s is within its tolerance, but…; about 445 more requests would decide it``,
    one line each, clipped to ``width`` (:func:`_short_reason`: the head, and the last clause, what decides it,
    where it fits). The points of one prediction whose reasons differ only in the point (``point closed-c4 has no
    TTFT p50`` / ``point closed-c8 has no TTFT p50``) are one line naming the points (:func:`_point_groups`:
    ``SKIP lat[concurrency=4, 8]: point closed-c4, closed-c8 has no TTFT p50``). Other skips whose shown reason is
    the same are one line with their count (``SKIP (58): needs a measurement: …``): a math run skips every measured
    prediction for one reason. Past :data:`MAX_SKIP_LINES`, the rest of the skips is one line that counts them. At
    ``-vv`` (``verbosity`` 2) each reason is whole, wrapped to the width, and every one is listed, each point on its
    own line. Rows without a reason add nothing."""
    full = verbosity >= 2
    width = max(width, 40)
    lines: list[str] = []
    at = {id(row): i for i, row in enumerate(rows)}  # each row's place: the lines keep the table's order
    undecided = [row for row in rows if row["verdict"] == INCONCLUSIVE_WORD and row.get("reason")]
    points, alone = ([], undecided) if full else _point_groups(undecided)
    # an INCONCLUSIVE's reason is why it is undecided: whole from -v (trial s25a #3: "…has no…; a measurement
    # decides" at 250 columns, the why cut away and no option that showed it)
    cut = False
    for shown, same in sorted([*points, *(("", [row]) for row in alone)], key=lambda g: at[id(g[1][0])]):
        text = _group_text(INCONCLUSIVE_WORD, same, shown, width, verbosity >= 1)
        cut = cut or text != _group_text(INCONCLUSIVE_WORD, same, shown, width, True)
        lines += text
    skipped = [row for row in rows if row["verdict"] == "SKIP" and row.get("reason")]
    points, alone = ([], skipped) if full else _point_groups(skipped)
    skips: dict[str, list[Mapping[str, str]]] = {}  # the reason shown -> the rows it stands for, in order
    for row in alone:
        shown = row["reason"] if full else _short_reason(row["reason"], width - len("SKIP (999): "))
        skips.setdefault(shown, []).append(row)
    listed = sorted([*points, *skips.items()], key=lambda g: at[id(g[1][0])])
    if not full and len(listed) > MAX_SKIP_LINES:  # bounded: the first ones, then how many more
        more = sum(len(same) for _shown, same in listed[MAX_SKIP_LINES - 1:])
        listed = listed[:MAX_SKIP_LINES - 1]
    else:
        more = 0
    for shown, same in listed:
        lines += _group_text("SKIP", same, shown, width, full)
    if more:
        lines.append(_clip(f"SKIP: {more} more, for other reasons (-vv lists every one)", width))
    if cut:
        lines.append(_clip("(an INCONCLUSIVE's reason is cut to the width: -v shows it whole)", width))
    return lines


def _group_text(word: str, same: Sequence[Mapping[str, str]], shown: str, width: int, full: bool) -> list[str]:
    """The reason line of one group of rows: one row, its id and its reason; rows whose shown reason is the same
    (``shown``), their count and it; one prediction's points (``shown`` ""), their ids and their reasons merged
    (:func:`_merge_points`)."""
    if len(same) == 1:  # its own id, and its own reason in the room the id leaves
        return _reason_text(f"{word} {same[0]['id']}: ", same[0]["reason"], width, full)
    if shown:
        return _reason_text(f"{word} ({len(same)}): ", shown, width, full)
    pid, reason, elided = _merge_points(same)
    return _reason_text(f"{word} {pid}{f' ({len(same)})' if elided else ''}: ", reason, width, full)


#: a reason's (or an id's) words and what lies between them: a number with its decimals is one word (``1.5``)
_TOKENS = re.compile(r"\w+(?:\.\d+)*|\W+")
#: a word that names a point by its number: the number alone (``C = 4``) or after one letter, as a point's id has it
#: (``closed-c4``, ``open-r2``); never a longer word that ends in a number (``bf16``, ``fp8``)
_POINT_WORD = re.compile(r"[A-Za-z]?(\d+(?:\.\d+)?)")
#: the most of a merged point list that is shown (more: the first two, "…", the last)
MAX_POINTS_LISTED = 3


def _point_numbers(pid: str) -> set[str]:
    """The numbers of the point an id names in its brackets (``lat[concurrency=16]`` -> ``{"16"}``); none without."""
    _base, bracket, point = pid.partition("[")
    return set(re.findall(r"\d+(?:\.\d+)?", point)) if bracket else set()


def _point_words(row: Mapping[str, str]) -> list[str]:
    """A row's id and reason as words, one list (so two rows compare in both at once)."""
    return [*_TOKENS.findall(row["id"]), "\0", *_TOKENS.findall(row["reason"])]


def _point_key(row: Mapping[str, str]) -> tuple[str, ...] | None:
    """A row's id and reason with each word that names its own point (its id's number: ``4`` or ``c4`` for
    ``lat[concurrency=4]``) masked: the same for two points of one prediction whose reasons differ only in the
    point; None for an id that names no point."""
    numbers = _point_numbers(row["id"])
    if not numbers:
        return None

    def own(word: str) -> bool:
        m = _POINT_WORD.fullmatch(word)
        return m is not None and m.group(1) in numbers
    return tuple("\1" if own(w) else w for w in _point_words(row))


def _point_groups(rows: Sequence[Mapping[str, str]]
                  ) -> tuple[list[tuple[str, list[Mapping[str, str]]]], list[Mapping[str, str]]]:
    """``rows`` parted into the groups of points of one prediction whose reasons differ only in the point (their
    :func:`_point_key` the same, their reasons not), each with "" for the reason shown, and the rest, in order
    (points whose reasons are word for word the same are among the rest: the shown-reason count says them)."""
    keyed: dict[tuple[str, ...], list[Mapping[str, str]]] = {}
    for row in rows:
        key = _point_key(row)
        if key is not None:
            keyed.setdefault(key, []).append(row)
    groups = [same for same in keyed.values() if len({row["reason"] for row in same}) > 1]
    grouped = {id(row) for same in groups for row in same}
    return [("", same) for same in groups], [row for row in rows if id(row) not in grouped]


def _merge_points(rows: Sequence[Mapping[str, str]]) -> tuple[str, str, bool]:
    """One prediction's points whose reasons differ only in the point, as one id and one reason: each word that
    names the point lists the points' (``lat[concurrency=4, 8]``, ``point closed-c4, closed-c8 has no TTFT p50``),
    past :data:`MAX_POINTS_LISTED` the first two, "…" and the last; and whether a list was so shortened."""
    merged: list[str] = []
    elided = False
    for at in zip(*(_point_words(row) for row in rows), strict=True):
        values = list(dict.fromkeys(at))
        if len(values) > MAX_POINTS_LISTED:
            values, elided = [*values[:2], "…", values[-1]], True
        merged.append(", ".join(values))
    pid, _sep, reason = "".join(merged).partition("\0")
    return pid, reason, elided


def _reason_text(head: str, reason: str, width: int, full: bool) -> list[str]:
    """``head`` and ``reason`` on one line of ``width`` (the reason shortened), or, ``full``, the whole reason
    wrapped, its further lines indented by two."""
    if not full:
        return [_clip(head + _short_reason(reason, width - len(head)), width)]
    return textwrap.wrap(head + reason, width, subsequent_indent="  ", break_long_words=False,
                         break_on_hyphens=False) or [head.rstrip()]


#: the least of a shortened reason's room its head keeps where the last clause is kept beside it
_MIN_REASON_HEAD = 0.4
#: the most characters a shortened reason's head gives up to end at a word
_MAX_WORD_CUT = 12


def _short_reason(reason: str, room: int) -> str:
    """``reason`` in ``room`` characters: whole where it fits; else its head and its last clause (after the last
    ``"; "`` outside brackets: what decides it, ``about 445 more requests at the point would decide it``) where that
    leaves the head at least 40% of the room; else its head, cut with ``…``."""
    if len(reason) <= room:
        return reason
    depth, cut = 0, -1
    for i, ch in enumerate(reason):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and reason.startswith("; ", i):
            cut = i
    tail = reason[cut:] if cut > 0 else ""
    keep = room - len(tail) - 1  # the head, then "…" before the tail
    if tail and keep >= _MIN_REASON_HEAD * room:
        head = reason[:keep]
        space = head.rfind(" ")
        if space > 0 and keep - space <= _MAX_WORD_CUT:  # at a word, where one ends near the cut
            head = head[:space]
        return head.rstrip(" ,;:") + "…" + tail
    return _clip(reason, room)


def band_legend(*, cpu: bool = False, bare: bool = False) -> str:
    """The line under the summary table saying what its ``[lo–hi]`` brackets are (trial s18 M1): the serving model's
    band, its nominal coverage from ``model.bands``; on the CPU, one host's recordings (``CPU_BAND_CAVEAT``).
    ``bare``: a serving value is shown without one (trial s18 M2): it has no band, and where the reason is."""
    text = (f"[lo–hi]: the serving model's band ({NOMINAL_COVERAGE:.0%} nominal; {CPU_BAND_CAVEAT})" if cpu
            else f"[lo–hi]: the serving model's band, {BAND_MEANING}")
    if bare:
        text += ("; a serving value without one has no band (why: the scorecard's serving column, or "
                 "`roofline predict --simulate --json`'s band_notes)")
    return text


def _layout(rows: list[dict[str, str]], width: int) -> list[str]:
    """The table with the serving band beside each serving value; where the bands would push a model's column (or
    the quantity) off a narrow terminal, the table without them and each band on a line of its own under its row
    (``serving 3,700.4 tok/s [3,315.2–4,688.4]``): a band can decide a verdict, so no width hides it."""
    banded = [{**row, "serving": row["serving"] + row.get("serving_band", "")} for row in rows]
    lines = _layout_rows(banded, width)
    if any(row.get("serving_band") for row in rows):
        if "serving" not in lines[0].split() or _kept(_layout_rows(rows, width)) > _kept(lines):
            return _layout_rows(rows, width, band_lines=True)
    return lines


def _kept(lines: list[str]) -> int:
    """How many of the columns that give way a layout kept (its header's words)."""
    head = lines[0].split()
    return sum(c in head for c in ("roofline", "serving", "quantity"))


#: the value column's header where every row's value comes from one source (the src column then says nothing)
_ONE_SOURCE = {"meas": "measured", "model": "model"}


def _band_line(row: Mapping[str, str], indent: int, width: int) -> str:
    """A row's serving band on a line of its own, under the row (the table had no room for it beside the serving
    value): the serving value with its unit, then the band as the wide table shows it, indented to the second
    column where that fits the width (else by two)."""
    text = f"serving {row['serving']}{row['serving_band']}"
    return " " * (indent if indent + len(text) <= width else 2) + text


def _layout_rows(rows: list[dict[str, str]], width: int, band_lines: bool = False) -> list[str]:
    """The table's lines; ``band_lines``: each row's serving band (``row["serving_band"]``) on a line under it."""
    heads = {c: c for c in _COLUMNS}
    sources = {row["src"] for row in rows}
    one_source = _ONE_SOURCE.get(next(iter(sources))) if len(sources) == 1 else None
    if one_source:  # a math run (all "model"), a measured-only file: the header says it once
        heads["measured/model"] = one_source
    natural = {c: max([len(heads[c])] + [len(row[c]) for row in rows]) for c in _COLUMNS}
    if one_source:
        natural["src"] = 0
    for c in ("roofline", "serving", "tolerance"):  # a column no row fills is not shown
        if not any(row[c] for row in rows):
            natural[c] = 0
    shown = {c: natural[c] for c in _COLUMNS if natural[c] and c != "quantity"}

    def total(cols: Mapping[str, int]) -> int:
        return sum(cols.values()) + len(cols) - 1

    # the id gets what it needs first; the models' columns stay only with room for a readable quantity too
    for c in ("roofline", "serving"):
        if c in shown and total(shown) + MIN_QUANTITY_WIDTH + 5 > width:
            del shown[c]
    room = width - total(shown) - 1
    if room >= MIN_QUANTITY_WIDTH:
        shown["quantity"] = min(natural["quantity"], room)
    else:
        if total(shown) > width and "tolerance" in shown:
            # a band label's parenthesis gives way before the ids do: the band's range stays, and is on the line
            # under the row too (the failure detail has the rest)
            short = max([len("tolerance")] + [len(row["tolerance"].split(" (", 1)[0]) for row in rows])
            shown["tolerance"] = max(short, shown["tolerance"] - (total(shown) - width))
        if total(shown) > width:  # no room for the quantity, nor for the whole ids: they lose their middles
            shown["id"] = max(MIN_ID_WIDTH, shown["id"] - (total(shown) - width))
    ids = elide_ids([row["id"] for row in rows], shown["id"])
    shown["id"] = max(len(x) for x in ids.values() if x is not None) if any(ids.values()) else MIN_ID_WIDTH
    if total(shown) > width and "tolerance" in shown:
        # still too wide (a band's label in the tolerance column, 80 columns): the label loses its end, where its
        # coverage is; the band's range is on the line under the row, the failure detail says the rest
        shown["tolerance"] = max(len("tolerance"), shown["tolerance"] - (total(shown) - width))
    order = [c for c in _COLUMNS if c in shown]
    error_rows_lose_message = "quantity" not in shown

    def cell(c: str, text: str) -> str:
        w = shown[c]
        if c == "id":
            text = ids[text] or ""
        elif c == "quantity":
            text = _clip(text, w)
        elif c == "tolerance" and len(text) > w:  # the label's parenthesis goes first, then its end
            text = _clip(text.split(" (", 1)[0], w)
        return f"{text:>{w}}" if c in _RIGHT else f"{text:<{w}}"

    head = " ".join(cell(c, heads[c]) if c != "id" else f"{'id':<{shown['id']}}" for c in order).rstrip()
    lines = [head, "-" * min(width, len(head))]
    verdict_at = sum(shown[c] + 1 for c in order[:-1])  # where the verdict column starts
    for row in rows:
        if ids[row["id"]] is None:  # too long to cut without ambiguity: whole, on its own line
            lines.append(row["id"])
        if not error_rows_lose_message and row["verdict"] == "ERROR" and row["src"] == "":
            # an invalid prediction has no values: its message runs across their empty columns to the verdict
            start = sum(shown[c] + 1 for c in order[:order.index("quantity")])
            room = verdict_at - start - 1
            lines.append((" ".join(cell(c, row[c]) for c in order[:order.index("quantity")])
                          + f" {_clip(row['quantity'], room):<{room}} " + cell("verdict", row["verdict"])).rstrip())
            continue
        lines.append(" ".join(cell(c, row[c]) for c in order).rstrip())
        if band_lines and row.get("serving_band") and row["serving"]:
            lines.append(_band_line(row, shown["id"] + 1, width))
        if error_rows_lose_message and row["verdict"] == "ERROR" and row["src"] == "":
            lines.append(_clip("  " + row["quantity"], width))  # what is wrong, on its own line
    return lines


#: the drift statuses listed one per line (the others are only counted)
_DRIFT_LISTED = ("drifted", "uncertain", "prediction_changed")
_DRIFT_WORD = {"drifted": "DRIFTED", "uncertain": "UNCERTAIN", "prediction_changed": "CHANGED"}


#: the first words of the drift section's count line, the words a log is searched for
COUNT_HEAD = "roofline drift: "
#: the narrowest the drift section is drawn (a narrower terminal gets lines this long)
MIN_DRIFT_WIDTH = 40
#: the narrowest a listed drift's text is wrapped beside its id (a longer id puts the text under it)
MIN_DRIFT_TEXT = 30


def drift_lines(drifts: Sequence[tuple[str, Mapping[str, Any]]], against: str, *, verbosity: int = 0,
                width: int = 120, added: Mapping[str, int] | None = None) -> list[str]:
    """The "roofline drift" section: each drifted prediction (and each whose ink changed) with its one-line
    drift, then the count line (``1 drifted, 20 steady, 1 new vs the previous run``); -qq the count alone.
    Every line fits ``width`` (an id longer than it excepted): the count line is broken between its clauses,
    never inside a count (:func:`wrap_count`). ``added``: the values this session added to a stored run, by run id
    (:func:`~pytest_roofline.history.drift_counts`)."""
    from pytest_roofline.history import drift_counts

    if not drifts:
        return []
    width = max(width, MIN_DRIFT_WIDTH)
    count = wrap_count(f"{COUNT_HEAD}{drift_counts([d for _i, d in drifts], added=added)} vs {against}", width)
    if verbosity <= -2:
        return count
    listed = [(pid, d) for pid, d in drifts if d.get("status") in _DRIFT_LISTED]
    idw = min(max((len(p) for p, _d in listed), default=0), 40)
    lines = []
    for pid, d in listed:
        word = _DRIFT_WORD.get(str(d.get("status")), "CHANGED")
        head = f"{_plain(pid):<{idw}} {word:<9} "
        if len(head) + MIN_DRIFT_TEXT > width:  # no room beside the id: the text under it, indented
            lines.append(head.rstrip())
            head = "    "
        for i, part in enumerate(textwrap.wrap(_plain(d.get("text")), width - len(head)) or [""]):
            lines.append((head if i == 0 else " " * len(head)) + part)  # wrapped, never cut: it says the baseline
    return lines + count


def _clauses(text: str) -> list[str]:
    """``text`` cut after each ``", "`` and before each ``" vs "`` outside parentheses: the count line's
    clauses (``19 compared (1 drifted, 18 steady),`` / ``3 not measured`` / ``vs the previous run``)."""
    out: list[str] = []
    depth = start = i = 0
    while i < len(text):
        if text[i] in "([":
            depth += 1
        elif text[i] in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(", ", i):
            out.append(text[start:i + 1])
            start = i = i + 2
            continue
        elif depth == 0 and text.startswith(" vs ", i):
            out.append(text[start:i])
            start = i = i + 1
            continue
        i += 1
    out.append(text[start:])
    return [c for c in out if c]


#: the first words of the count line's two-word statuses (``prediction changed``, ``not judged``, ``not measured``)
_TWO_WORD_STATUS = frozenset({"prediction", "not"})


def _atoms(clause: str, room: int) -> list[str]:
    """A clause too long for a line in pieces: its parts between commas (``1 drifted,`` ``2 prediction changed),``),
    and a part longer than ``room`` in words, each count kept with the word after it (``21 new``)."""
    out: list[str] = []
    for part in clause.replace(", ", ",\0").split("\0"):
        if len(part) <= room:
            out.append(part)
            continue
        glue = False
        for word in part.split(" "):
            if glue and out:
                out[-1] += " " + word
            else:
                out.append(word)
            # a count keeps the word after it, and a two-word status its second (``2 prediction changed``)
            glue = word.rstrip(",").replace(",", "").replace(".", "").isdigit() or (
                word in _TWO_WORD_STATUS and len(out[-1].split(" ")) == 2 and out[-1].split(" ")[0].isdigit())
    return out


def wrap_count(line: str, width: int) -> list[str]:
    """The drift count line in lines of at most ``width`` columns, the further ones indented under the first's
    counts: broken between clauses (after a comma, before ``vs``), a clause longer than a line between words, a
    count never parted from its word. One line where it fits; ``roofline drift: N compared (...)`` stays on the
    first line wherever it fits in the width, so a search for it finds the counts."""
    if len(line) <= width:
        return [line]
    indent = " " * (len(COUNT_HEAD) if line.startswith(COUNT_HEAD) else 2)
    if len(indent) + max(len(w) for w in line.split(" ")) > width:  # a long word (a run id): less indent
        indent = "  "
    lines = [""]
    for clause in _clauses(line):
        sep = " " if lines[-1].strip() else ""
        if len(lines[-1]) + len(sep) + len(clause) <= width:
            lines[-1] += sep + clause
            continue
        if len(indent) + len(clause) <= width:  # whole, on a line of its own
            lines.append(indent + clause)
            continue
        for atom in _atoms(clause, width - len(indent)):  # longer than a line: in pieces, from where the line stands
            if lines[-1].strip() and len(lines[-1]) + 1 + len(atom) > width:
                lines.append(indent)
            lines[-1] += (" " if lines[-1].strip() else "") + atom
    return [ln.rstrip() for ln in lines if ln.strip()]
