"""Collection: a prediction file becomes one pytest item per prediction, located at the prediction's YAML line."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from pytest_roofline import redact
from pytest_roofline.errors import PointError, PredictionDrifted, PredictionMismatch
from pytest_roofline.format.limits import DEFAULT_LIMITS, INI_OPTIONS, Limits, positive_int
from pytest_roofline.format.spec import Prediction, Spec, SpecError, load_spec
from pytest_roofline.measure.target import MeasurementProvider
from pytest_roofline.pytest_plugin.base import (  # the collection rule lives in the light module the entry uses
    INCONCLUSIVE_POLICIES,
    looks_like_prediction_file,
    matches_patterns,
    wants_file,
)
from pytest_roofline.pytest_plugin.longrepr import prediction_longrepr
from pytest_roofline.pytest_plugin.session import get_session
from pytest_roofline.report.junit import junit_properties
from pytest_roofline.report.terminal import failure_line
from pytest_roofline.scoring import Verdict

if TYPE_CHECKING:  # the type pytest's own Function.repr_failure returns; pytest does not re-export it
    from _pytest._code.code import TerminalRepr

__all__ = ["PredictionFile", "PredictionItem", "PredictionMismatch", "matches_patterns", "VERDICT_KEY", "DRIFT_KEY",
           "INCONCLUSIVE_POLICIES",
           "limits_from_ini", "looks_like_prediction_file", "wants_file"]

VERDICT_KEY = pytest.StashKey[Verdict]()
#: the prediction's drift against the stored history (a plain dict; only with --roofline-history)
DRIFT_KEY = pytest.StashKey[dict[str, Any]]()


def limits_from_ini(config: pytest.Config) -> Limits:
    """The loader's limits, with any the ini file raises (``roofline_max_yaml_nodes = 2000000``)."""
    changes = {}
    for name, option in INI_OPTIONS.items():
        value = config.getini(option)
        if value not in (None, ""):
            try:
                changes[name] = positive_int(value, option)
            except ValueError as exc:
                raise pytest.UsageError(f"ini option {exc}") from None
    return DEFAULT_LIMITS.with_changes(**changes)


class PredictionFile(pytest.File):
    """A YAML prediction file."""

    spec: Spec | None = None

    def collect(self) -> Iterator[pytest.Item]:

        rs = get_session(self.config)
        try:
            self.spec = load_spec(self.path, limits=limits_from_ini(self.config))
        except SpecError as exc:
            raise self.CollectError(str(exc)) from None
        except OSError as exc:
            raise self.CollectError(f"{self.path}: cannot read: {exc}") from None
        rs.register_spec(self.spec)
        for pred in self.spec.predictions:
            # an error of the math check only (a setting the serving model refuses) leaves a measured run its point
            error = pred.error or pred.error_in(rs.mode_for(pred))  # (an errored prediction may name no quantity)
            measured = rs.measured and error is None and pred.q.measure is not None
            check: Callable[..., None]  # the fixture it names is its only difference
            if measured:
                def check(roofline_measurements: Any) -> None:  # noqa: ARG001 - the fixture starts engines lazily
                    pass
            else:
                def check() -> None:
                    pass
            item = PredictionItem.from_parent(self, name=pred.id, callobj=check, prediction=pred, spec=self.spec)
            item.add_marker(pytest.mark.roofline)
            if error is None:
                item.add_marker(pytest.mark.roofline_measured if pred.q.measure else pytest.mark.roofline_math)
                for m in pred.marks:
                    self.config.addinivalue_line("markers", f"{m}: declared in {self.path.name}")
                    item.add_marker(getattr(pytest.mark, m))
                mode = rs.mode_for(pred)
                if pred.xfail is not None and pred.xfail.applies(mode):
                    item.add_marker(pytest.mark.xfail(reason=pred.xfail.reason, strict=pred.xfail.strict,
                                                      raises=PredictionMismatch))
            yield item


class PredictionItem(pytest.Function):
    """One prediction. Scoring (and any measurement it needs) happens in setup, so a dead engine is an ERROR."""

    def __init__(self, *, prediction: Prediction, spec: Spec, **kwargs: Any):
        super().__init__(**kwargs)
        self.prediction = prediction
        self.spec = spec

    def setup(self) -> None:
        rs = get_session(self.config)
        error = self.prediction.error or self.prediction.error_in(rs.mode_for(self.prediction))
        if error is not None:  # an ERROR verdict, so the summary table and scorecard list it
            verdict = Verdict.for_error(self.prediction, error, mode="math")
            self.stash[VERDICT_KEY] = verdict
            rs.verdicts.append(verdict)
            raise error
        super().setup()

        provider = cast("MeasurementProvider | None", self.funcargs.get("roofline_measurements"))
        verdict = rs.score(self.spec, self.prediction, provider)
        self.stash[VERDICT_KEY] = verdict
        drift = rs.drift_of(self.spec, self.prediction, verdict)
        if drift is not None:
            self.stash[DRIFT_KEY] = drift
        # JUnit XML properties (numbers, the unit in the name), set before any report of this item is built
        self.user_properties.extend(junit_properties(verdict))
        if verdict.status == "error":
            # the tail once: an engine's start error carries it in its message already (trial s25c #8: printed twice)
            tail = verdict.log_tail if verdict.log_tail and verdict.log_tail.strip() not in verdict.reason else ""
            raise PointError(verdict.reason + (f"\n--- engine log tail ---\n{tail}" if tail else ""))

    def runtest(self) -> None:
        verdict = self.stash[VERDICT_KEY]
        if verdict.status == "fail":
            raise PredictionMismatch(verdict)
        # --roofline-drift-fail, like --benchmark-compare-fail: drift is about the measured value, not the ink, so
        # a drifted value fails whatever its verdict says of the ink (an INCONCLUSIVE or skipped one included)
        drift = self.stash.get(DRIFT_KEY, None)
        if drift is not None and drift.get("status") == "drifted" and get_session(self.config).drift_fail:
            raise PredictionDrifted(verdict, drift)
        if verdict.status == "skip":  # reported at the prediction's YAML line, not at this line
            raise pytest.skip.Exception(verdict.reason, _use_item_location=True)
        if verdict.status == "inconclusive":
            policy = get_session(self.config).inconclusive
            if policy == "fail":
                raise PredictionMismatch(verdict)
            if policy == "skip":
                raise pytest.skip.Exception(f"INCONCLUSIVE: {verdict.reason}", _use_item_location=True)

    def reportinfo(self) -> tuple[Path, int, str]:
        p = self.prediction
        label = p.quantity + (f" at {', '.join(f'{k}={v}' for k, v in p.at_text.items())}" if p.at_text else "")
        return self.path, p.line - 1, f"{p.id}: {label}"

    def brief_longrepr(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        """The report of a setup ERROR this plugin raised on purpose (an invalid prediction, an unmeasured
        point): the message alone, as ``pytest.fail(..., pytrace=False)`` shows one, instead of the plugin's own
        traceback (pytest formats setup errors without :meth:`repr_failure`). None for any other exception."""
        message = self._own_message(excinfo.value)
        if message is None or not isinstance(excinfo.value, (SpecError, PointError)):
            return None
        try:
            # a point error quotes what a server answered (an HTTP error body, an SSE error event): its control
            # characters reach the terminal escaped, never as raw ESC sequences (issue 23)
            pytest.fail(redact.printable(message), pytrace=False)
        except pytest.fail.Exception:
            return pytest.ExceptionInfo.from_current().getrepr(style="value")
        return None  # pragma: no cover - pytest.fail always raises

    def _own_message(self, exc: BaseException) -> str | None:
        """The plugin's own words for an exception it raises on purpose; None for any other exception."""
        if isinstance(exc, PredictionMismatch):
            # a value that failed its ink and drifted too: both are said (trial s24 L8: the drift was lost here)
            drift = self.stash.get(DRIFT_KEY, None)
            drifted = (f"drifted too: {drift.get('text')}"
                       + (" (--roofline-drift-fail)" if get_session(self.config).drift_fail else "") + "\n"
                       if drift is not None and drift.get("status") == "drifted" else "")
            return f"{drifted}{exc.verdict.explain()}\n{self.location[0]}:{self.prediction.line}: PredictionMismatch"
        if isinstance(exc, PredictionDrifted):
            return (f"drifted: {exc.drift.get('text')} (--roofline-drift-fail)\n{exc.verdict.explain()}\n"
                    f"{self.location[0]}:{self.prediction.line}: PredictionDrifted")
        if isinstance(exc, SpecError):
            return f"invalid prediction: {exc}"
        if isinstance(exc, PointError):
            return str(exc)
        return None

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | TerminalRepr:
        # ``style`` keeps Node.repr_failure's signature; pytest's Function.repr_failure takes none (it reads --tb
        # itself), so it is not passed on
        message = self._own_message(excinfo.value)
        if isinstance(excinfo.value, PredictionMismatch) and message is not None:  # shaped so that --tb applies
            return prediction_longrepr(message, path=self.location[0], lineno=self.prediction.line,
                                       message=failure_line(excinfo.value.verdict),
                                       style=self.config.getoption("tbstyle", "auto"))
        return message if message is not None else super().repr_failure(excinfo)
