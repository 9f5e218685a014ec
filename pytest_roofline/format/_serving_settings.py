"""The engine settings the serving model does not simulate, said at their own lines (one concept): an error of
each prediction whose check is the serving model's value, and one
:class:`~pytest_roofline.errors.UnsimulatedSettingWarning` a setting for the predictions that only lose that value
(:func:`refuse_serving_settings`, as the file is read); the refusal of ``roofline predict --simulate FILE`` at the
file's lines (:func:`locate_settings`).  Which settings they are is ``model.setup.serving_arg_problems``
(``model.engine_args``: scope "serving")."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import yaml

from pytest_roofline.errors import SpecError, SpecErrors, UnsimulatedSettingWarning
from pytest_roofline.format._reader import NodeReader
from pytest_roofline.format._sections import (
    OwnSetup,
    _find,
    prediction_setup,
    takes_serving_value,
    written_at,
)
from pytest_roofline.format._types import PredictedKind, Prediction, Spec
from pytest_roofline.model import engine_args
from pytest_roofline.model.setup import Setup, serving_arg_problems

__all__ = ["refuse_serving_settings", "locate_settings", "own_setup_key", "SettingLineWarning", "replaced_by_flags"]


class SettingLineWarning(UnsimulatedSettingWarning):
    """The :class:`~pytest_roofline.errors.UnsimulatedSettingWarning` of one setting at its line, keeping the field it
    is about (``engine.args.scheduling_policy``, in :attr:`field`): a command whose flag replaces that field's value
    (``roofline predict --simulate FILE --set engine.args.scheduling_policy=fcfs``) no longer runs the file's value,
    and drops the warning about it (:func:`replaced_by_flags`)."""

    #: the setting's field, as a prediction file names it
    field: str = ""


def refuse_serving_settings(ctx: NodeReader, spec: Spec, setup: Setup, root: yaml.Node | None,
                            own: Sequence[OwnSetup] = ()) -> None:
    """Each engine setting the serving model does not simulate (``model.setup.serving_arg_problems``:
    multi-step scheduling, priority scheduling, partial prefills, eager mode on a GPU, async scheduling at the
    non-default value, pipeline parallelism, ...) is an error, at the setting's own line, of the predictions whose
    check is the serving model's value (:func:`takes_serving_value`), and only where it is: ``roofline check``
    reports every error of the file.

    * ``predicted: model``: the ink is the serving model's value, so there is nothing to check in any mode
      (``pred.error``).
    * A number in ink under ``model_column: serving``: the CPU-only math check compares it with the serving model's
      value, so it is that check's error (``pred.math_error``); a measured run (``--gpu``, ``--replay``) still
      measures it and scores the ink against the measurement, the refusal in the model column's note (the serving
      model's "does not compute it here", ``scoring``).  A quantity no run measures is checked by the math alone,
      so it is an error in every run (``Prediction.error_in``).
    * The other predictions of a quantity the serving model computes (a number in ink checked against the roofline,
      or a measured quantity only the serving model computes) lose their serving-model value, and with it its band:
      the setting is one :class:`~pytest_roofline.errors.UnsimulatedSettingWarning` at its line, once, naming them
      and the fix (the roofline's and KV checks still run; a measured run is unaffected: vLLM honours the setting),
      and each keeps why in :attr:`Prediction.no_serving_value` for its verdict's reason.

    The file's setup (``setup``, its lines in ``root``) is checked for the predictions without a ``setup:`` of their
    own; each item's own ``setup:`` (``own``, a table's included) is resolved (:func:`prediction_setup`) and checked
    the same way for its tests, one error for all of them, at the setting's line in that ``setup:`` (the fix:
    ``setup.engine.args...``), else at the file's line where the setting is the file's (a ``setup:`` that leaves
    ``engine.args`` out keeps the file's), else at the ``setup:`` line.  Where each of the file's own settings is
    written is kept in :attr:`Spec.unsimulated_settings`, and each own ``setup:``'s in
    :attr:`Spec.own_unsimulated_settings` (``roofline predict --simulate`` refuses each setup's table there)."""
    # each setting at its line warned once, whatever setups share it: its line's text and the predictions it leaves
    # without a serving-model value
    warned: dict[tuple[str, int | None], tuple[str, list[str]]] = {}
    mine = [p for p in spec.predictions if p.error is None and not p.setup]
    problems = _serving_problems(setup, strict=any(takes_serving_value(spec, p) for p in mine))
    for problem in problems:
        node = written_at(root, problem.field) if root is not None else None
        spec.unsimulated_settings[problem.field] = _where(ctx.file, node)
    _refuse_serving(ctx, spec, problems, mine,
                    lambda field: (_find(root, field) if root is not None else None, ""), warned)
    for item in own:
        preds = [p for p in item.predictions if p.error is None]
        takers = [p for p in preds if takes_serving_value(spec, p)]
        if not any(p.q.serving is not None for p in preds):
            continue
        try:
            resolved = prediction_setup(spec, preds[0].setup)
        except Exception:  # noqa: BLE001 - a setup that does not resolve is its item's error already (_expand)
            continue

        def at(field: str, item: OwnSetup = item) -> tuple[yaml.Node | None, str]:
            mine = written_at(item.node, field)
            if mine is not None:
                return mine, "setup."
            return written_at(root, field) or item.key, ""
        problems = _serving_problems(resolved, strict=bool(takers))
        located = spec.own_unsimulated_settings.setdefault(own_setup_key(preds[0].setup), {})
        for problem in problems:  # the first item's line where several write the same setup
            located.setdefault(problem.field, _where(ctx.file, at(problem.field)[0]))
        _refuse_serving(ctx, spec, problems, preds, at, warned)
    for (field, _line), (head, ids) in warned.items():
        many = len(dict.fromkeys(i.split("[", 1)[0] for i in ids)) > 1
        msg = (f"{head}. A warning, not an error: the serving model does not simulate it, so {_named(ids)} "
               f"{'have' if many else 'has'} no serving-model value and no band (a math check that needs them cannot "
               "decide); the roofline's and the KV pool's checks still run, and a measured run (--gpu, --replay) is "
               "unaffected (vLLM runs the setting): remove it for a model check, or measure")
        spec.warnings.append(msg)
        warning = SettingLineWarning(msg)
        warning.field = field.removeprefix("setup.")  # a prediction's own setup writes the same field
        warnings.warn(warning, stacklevel=3)


def replaced_by_flags(warning: Warning | str, flags: Mapping[str, str]) -> bool:
    """Whether ``warning`` is a setting's warning at the file's line (:class:`SettingLineWarning`) whose field a
    command-line flag sets (``flags``: field -> the flag, ``cli.setup_flags.flag_fields``): the value used is the
    flag's, not the line's, so the line's warning no longer applies (the flag's value, where the serving model does
    not simulate it either, is refused naming the flag: :func:`locate_settings`)."""
    return isinstance(warning, SettingLineWarning) and warning.field in flags


def own_setup_key(setup: Mapping[str, Any]) -> str:
    """The key of a prediction's own setup (:attr:`Prediction.setup`) in :attr:`Spec.own_unsimulated_settings`."""
    return json.dumps(setup, sort_keys=True, default=str)


def locate_settings(spec: Spec, exc: engine_args.EngineArgsError, own: Mapping[str, Any] | None = None,
                    flags: Mapping[str, str] | None = None) -> str:
    """``exc``'s text with each setting the file's own sections write (:attr:`Spec.unsimulated_settings`) at its
    ``file:line``: how ``roofline predict --simulate FILE`` refuses the settings the serving model does not
    simulate.  ``flags`` (field -> the flag that set it, ``cli.setup_flags.flag_fields``): a setting a flag set is
    the flag's value, not the line's, and is said naming the flag (``--set engine.args.scheduling_policy: ...``)
    wherever the file writes it too.  ``own``: the prediction's own setup the settings are of
    (:attr:`Spec.own_unsimulated_settings`: its lines, the file's where it keeps the file's setting; none where the
    reader located none, a setup of predictions the serving model computes nothing for)."""
    where = spec.unsimulated_settings if own is None else spec.own_unsimulated_settings.get(own_setup_key(own), {})
    flags = flags or {}
    lines = [f"{flags[p.field]}: {p.text}" if p.field in flags else f"{where[p.field]}: {p.text}"
             if p.field in where else p.text for p in exc.problems]
    if len(lines) == 1:
        return lines[0]
    return (f"{len(lines)} engine settings the serving model does not simulate (fix each, then run again):\n"
            + "\n".join(f"  - {line}" for line in lines))


def _serving_problems(setup: Setup, *, strict: bool) -> list[engine_args.Problem]:
    """``serving_arg_problems(setup)``; where no prediction's check is the serving model's value (``strict``
    False: a warning at most), a setup whose figures it cannot read has none."""
    if strict:
        return serving_arg_problems(setup)
    try:
        return serving_arg_problems(setup)
    except (ValueError, KeyError):
        return []


def _where(file: str, node: yaml.Node | None) -> str:
    """``file:line`` of ``node`` (the file alone where it is None)."""
    return f"{file}:{node.start_mark.line + 1}" if node is not None else file


def _named(ids: Sequence[str]) -> str:
    """Prediction ids as a message names them: the first five, then how many more."""
    ids = list(dict.fromkeys(i.split("[", 1)[0] for i in ids))
    return ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def _refuse_serving(ctx: NodeReader, spec: Spec, problems: list[engine_args.Problem], preds: list[Prediction],
                    at: Callable[[str], tuple[yaml.Node | None, str]],
                    warned: dict[tuple[str, int | None], tuple[str, list[str]]]) -> None:
    """:func:`refuse_serving_settings` for the predictions ``preds`` of one setup, whose unsimulated settings are
    ``problems``: ``at(field)`` is where a setting is written and the prefix its fix takes there ("" in the file's
    sections, "setup." in a prediction's own); ``warned``: the warnings to give, by setting and line."""
    if not problems:
        return
    takers = [p for p in preds if takes_serving_value(spec, p)]
    everywhere = [p for p in takers if p.predicted.kind is PredictedKind.MODEL]
    math_only = [p for p in takers if p.predicted.kind is not PredictedKind.MODEL]
    for group, why, attr in ((everywhere, "predicted: model", "error"),
                             (math_only, "model_column: serving", "math_error")):
        if not group:
            continue
        ids = list(dict.fromkeys(p.id.split("[", 1)[0] for p in group))
        named = _named(ids)
        where = ("" if attr == "error" else
                 "; an error of the math check only: a measured run (--gpu, --replay) scores the ink against its "
                 "measurement, this refusal in the model column's note")
        errors = []
        for problem in problems:
            node, prefix = at(problem.field)
            errors.append(SpecError(
                f"{problem.text} (refused where the serving model runs: {named} take{'s' if len(ids) == 1 else ''} "
                f"its value, {why}{where})", file=ctx.file,
                line=node.start_mark.line + 1 if node is not None else None,
                hint=f"change or remove {prefix}{problem.field} as the line says, or check these predictions against "
                     "the roofline (model_column: roofline, a number in ink) where it computes them"))
        error = errors[0] if len(errors) == 1 else SpecErrors(errors)
        for p in group:
            setattr(p, attr, error)
    _warn_unsimulated(ctx, problems, [p for p in preds if p not in takers and p.q.serving is not None], at, warned)


def _warn_unsimulated(ctx: NodeReader, problems: list[engine_args.Problem], losers: list[Prediction],
                      at: Callable[[str], tuple[yaml.Node | None, str]],
                      warned: dict[tuple[str, int | None], tuple[str, list[str]]]) -> None:
    """The predictions ``losers`` of quantities the serving model computes whose check is not its value: each
    unsimulated setting of their setup (``problems``) leaves them without the serving model's value (and its band):
    added to ``warned`` (one warning a setting, at its line, given once every setup is read: a warning, since the
    other checks still run and vLLM honours the setting in a measured run), and kept on each as
    :attr:`Prediction.no_serving_value`."""
    if not losers:
        return
    places = []
    for problem in problems:
        node, prefix = at(problem.field)
        where = _where(ctx.file, node)
        places.append(f"{prefix}{problem.field} at {where}")
        head, ids = warned.setdefault((prefix + problem.field, node.start_mark.line if node is not None else None),
                                      (f"{where}: {problem.text}", []))
        ids.extend(p.id for p in losers)
    text = (f"no value: it does not simulate {'; '.join(places)}; remove "
            f"{'it' if len(places) == 1 else 'them'} for a model check")
    for p in losers:
        p.no_serving_value = p.no_serving_value or text
