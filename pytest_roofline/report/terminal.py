"""The compact table printed at the end of a pytest run (fits 100 columns)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["summary_table", "OUTCOME_WORD"]

OUTCOME_WORD = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP", "xfailed": "XFAIL", "xpassed": "XPASS",
                "error": "ERROR"}


def _outcome(report: Any) -> str:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.when == "setup" and report.failed:
        return "error"
    return report.outcome


def _clip(text: str, width: int) -> str:
    text = " ".join(str(text).split()).replace(" FLOP/byte", " FLOP/B")
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def _short(text: str) -> str:
    """A model value without its unit, for the narrow roofline/serving columns ('2,666.9 tok/s' -> '2,666.9')."""
    text = str(text or "")
    if not text or text.startswith("("):
        return ""
    head = text.split(" ")[0]
    if text.endswith(" %"):  # a share keeps its sign of being one
        return head + "%"
    return head if any(ch.isdigit() for ch in head) else text


def _error_message(reason: str) -> str:
    """The first line of an error without its ``file:line:`` prefix (the id already says which prediction)."""
    first = reason.strip().splitlines()[0] if reason.strip() else reason
    head, sep, rest = first.partition(": ")
    return rest if sep and ":" in head and head.rsplit(":", 1)[-1].isdigit() else first


def summary_table(reports: Iterable[Any], width: int = 100) -> list[str]:
    """One line per prediction: id, quantity, predicted, measured (or model), src, both models' values where
    they exist (the decode roofline's and the serving model's, without units), error, verdict."""
    rows = []
    for r in reports:
        v = r.roofline
        got = v.get("measured_text") if v.get("mode") == "measured" else v.get("model_text")
        src = "meas" if v.get("mode") == "measured" else ("serv" if v.get("model_source") == "serving" else "model")
        roof = v.get("roofline_text") or (v.get("model_text") if v.get("model_source") == "roofline" else "")
        quantity = v.get("quantity") or ""
        if v.get("status") == "error" and quantity in ("", "?"):  # an invalid prediction: what is wrong with it
            quantity = _error_message(str(v.get("reason") or "invalid prediction"))
            src = ""
        rows.append((v["id"], quantity, v.get("predicted_text") or "", f"{got or '—'}", src,
                     _short(roof), _short(v.get("serving_text") or ""),
                     v.get("error_text", "").split(" (")[0] or ("" if v.get("status") != "skip" else "—"),
                     OUTCOME_WORD.get(_outcome(r), _outcome(r).upper())))
    # the id is what a reader looks up in the YAML: it gets the room it needs first, the quantity the rest
    fixed = 13 + 14 + 5 + 8 + 8 + 8 + 7 + 8  # predicted, measured/model, src, roofline, serving, error, verdict, gaps
    flex = max(24, width - fixed)
    longest_id = max((len(r[0]) for r in rows), default=2)
    id_w = max(2, min(longest_id, flex - 8))
    q_w = max(8, flex - id_w)
    head = (f"{'id':<{id_w}} {'quantity':<{q_w}} {'predicted':>13} {'measured/model':>14} {'src':<5} "
            f"{'roofline':>8} {'serving':>8} {'error':>8} verdict")
    lines = [head, "-" * min(width, len(head) + 2)]
    for pid, q, pred, got, src, roof, serv, err, verdict in rows:
        lines.append(f"{_clip(pid, id_w):<{id_w}} {_clip(q, q_w):<{q_w}} {_clip(pred, 13):>13} {_clip(got, 14):>14} "
                     f"{src:<5} {_clip(roof, 8):>8} {_clip(serv, 8):>8} {_clip(err, 8):>8} {verdict}")
    counts: dict[str, int] = {}
    for *_, verdict in rows:
        counts[verdict] = counts.get(verdict, 0) + 1
    lines.append(", ".join(f"{n} {k.lower()}" for k, n in sorted(counts.items())))
    return lines
