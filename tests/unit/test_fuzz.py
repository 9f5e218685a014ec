"""Fuzzing the prediction-file loader, the tolerance parser and the number/unit parser (hypothesis), and the
readers of other people's files — peers' exports, results files, datasets — on their committed samples mutated
byte by byte (issue 23: bad UTF-8, NUL, 1e999, NaN, nesting 100,000 deep, truncation).

Each target may accept its input or refuse it with its own error — :class:`SpecError` from the loader,
:class:`ToleranceError` from the tolerance parser, :class:`UnitError` from the number parser, all
:class:`RooflineError` — and nothing else: no ``RecursionError``, ``OverflowError``, ``UnicodeDecodeError``,
PyYAML's own exceptions, ``TypeError``... Every example must also finish within ``PER_EXAMPLE_S``.

The runs are derandomized (the same examples every run, no example database), and sized to take ~20 s in all
on a CI machine. A longer hunt by hand: ``HYPOTHESIS_PROFILE=thorough`` (tests/conftest.py) runs each target on
the profile's examples (1,000) where that is more than its own count.
"""

from __future__ import annotations

import math
import time
import warnings
from pathlib import Path

import hypothesis
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import PREDICTIONS

from pytest_roofline.errors import CalibrationMismatchWarning, RooflineError, SpecError, ToleranceError, UnitError
from pytest_roofline.format.limits import Limits
from pytest_roofline.format.spec import PREDICTION_FIELDS, TOP_FIELDS, loads_spec
from pytest_roofline.format.tolerance import parse_tolerance
from pytest_roofline.units import DIMENSIONS, parse_number, parse_printed_number, parse_value, to_int

SHIPPED = sorted(PREDICTIONS.glob("*.yaml"))
TEXTS = {p: p.read_text(encoding="utf-8") for p in SHIPPED}

#: the bound on one example, in this process's CPU time (a file of the shipped size loads in ~30 ms; the bound is
#: for hangs, not speed, and CPU time is what a busy shared machine cannot inflate)
PER_EXAMPLE_S = 5.0
#: small limits, so that bombs and products built by the fuzzer are refused cheaply rather than run
LIMITS = Limits(max_yaml_nodes=50_000, max_tests_per_prediction=200, max_tests_per_file=5_000,
                max_value_length=1_000)


def fuzz_settings(examples: int) -> settings:
    """A target's settings: the suite's profile (no deadline), derandomized with no example database, on
    ``examples`` examples or the profile's own count where that is larger (``HYPOTHESIS_PROFILE=thorough``)."""
    return settings(max_examples=max(examples, settings.default.max_examples), derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much], print_blob=True)


def within_bound(fn, *args, allowed: tuple[type[BaseException], ...]):
    """Call ``fn``; an exception outside ``allowed`` or an example slower than the bound fails the test."""
    t0 = time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibrationMismatchWarning)
            return fn(*args)
    except allowed:
        return None
    finally:
        elapsed = time.process_time() - t0
        assert elapsed < PER_EXAMPLE_S, f"one example took {elapsed:.1f} s of CPU"


# ----------------------------------------------------------------------------------------------------------------
# the loader: mutated shipped files
# ----------------------------------------------------------------------------------------------------------------
#: fragments a mutation inserts: YAML syntax, traps, bad bytes and the probe's own bad values
FRAGMENTS = [":", ": ", "-", "- ", "[", "]", "{", "}", ",", "#", "'", '"', "&a ", "*a", "&a [*a]",
             "!!python/name:os.system", "!!binary", "? ", "|", ">", "\t", "\n", "\n  ", "\x00", "\x07", "\ufeff",
             "\u2028", "é", "1e999", "-1e999",
             ".nan", ".inf", "-1024", "0", "on", "yes", "~", "null", "2024-01-01", "0o2000", "±", "±1e999", "10x",
             "every", "model", "GiB", "tok/s", "[1, 2, 3]", "{batch: [1, 2, 4]}", "1" * 400, "x" * 2000, "[" * 200]


@st.composite
def mutated_file(draw: st.DrawFn) -> tuple[Path, str]:
    path = draw(st.sampled_from(SHIPPED))
    text = TEXTS[path]
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["insert", "delete", "duplicate", "replace_line", "swap_lines", "indent"]))
        i = draw(st.integers(0, len(text)))
        if kind == "insert":
            text = text[:i] + draw(st.sampled_from(FRAGMENTS) | st.text(max_size=8)) + text[i:]
        elif kind == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 40)):]
        elif kind == "duplicate":
            text = text[:i] + text[i:i + draw(st.integers(1, 200))] + text[i:]
        else:
            lines = text.split("\n")
            j = draw(st.integers(0, len(lines) - 1))
            k = draw(st.integers(0, len(lines) - 1))
            if kind == "replace_line":
                lines[j] = draw(st.sampled_from(FRAGMENTS) | st.text(max_size=30))
            elif kind == "swap_lines":
                lines[j], lines[k] = lines[k], lines[j]
            else:
                lines[j] = " " * draw(st.integers(0, 6)) + lines[j].lstrip()
            text = "\n".join(lines)
    return path, text


def check_spec(text: str, file: str) -> None:
    t0 = time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibrationMismatchWarning)
            spec = loads_spec(text, file=file, limits=LIMITS)
    except SpecError as exc:
        assert exc.file == file and str(exc).startswith(file)
        return
    finally:
        assert time.process_time() - t0 < PER_EXAMPLE_S
    for p in spec.predictions:  # a prediction that did not validate carries a SpecError of its own
        assert p.error is None or isinstance(p.error, SpecError)
        assert p.error is not None or p.quantity


@fuzz_settings(300)
@given(mutated_file())
def test_loader_on_mutated_shipped_files(case):
    path, text = case
    check_spec(text, str(path))  # the real path: a calibration: reference resolves beside it


# ----------------------------------------------------------------------------------------------------------------
# the loader: generated YAML
# ----------------------------------------------------------------------------------------------------------------
SCALARS = (st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=True)
           | st.sampled_from(FRAGMENTS[20:]) | st.text(max_size=20))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=10) | st.sampled_from(list(PREDICTION_FIELDS)), inner,
                                        max_size=4), max_leaves=20)
PREDICTION = st.dictionaries(st.sampled_from(list(PREDICTION_FIELDS)) | st.text(max_size=8), VALUES, max_size=6)
GOOD_TOP = {"hardware": st.sampled_from(["a100-sxm4-80gb", "h100-sxm", "cpu"]) | VALUES,
            "model": st.sampled_from(["qwen3-8b", "llama-3.1-8b", "tiny"]) | VALUES,
            "predictions": st.lists(PREDICTION, max_size=4) | VALUES}
DOCUMENT = st.fixed_dictionaries(GOOD_TOP, optional={k: VALUES for k in TOP_FIELDS if k not in GOOD_TOP})


@fuzz_settings(100)
@given(DOCUMENT, st.booleans())
def test_loader_on_generated_yaml(doc, flow):
    text = yaml.safe_dump(doc, allow_unicode=True, default_flow_style=flow, sort_keys=False)
    check_spec(text, "gen.yaml")


@fuzz_settings(150)
@given(st.text(alphabet=st.sampled_from(list("ab1 :-[]{},#&*!'\"\n\t.%±e") + ["\x00", "é", "\ufeff"]),
               max_size=300))
def test_loader_on_yaml_like_text(text):
    check_spec("hardware: a100-sxm4-80gb\nmodel: qwen3-8b\n" + text, "text.yaml")


# ----------------------------------------------------------------------------------------------------------------
# the number/unit parser and the tolerance parser
# ----------------------------------------------------------------------------------------------------------------
UNITS = sorted({u for table in DIMENSIONS.values() for u in table})


@st.composite
def number_text(draw: st.DrawFn) -> str:
    sign = draw(st.sampled_from(["", "-", "+", "−", " - "]))
    mant = draw(st.sampled_from(["0", "1", "22,959", "1_000", "4.80", ".5", "5.", "1" * 30, "1" * 400, "1,2,3"]))
    exp = draw(st.sampled_from(["", "e3", "E-2", "e999", "e-999", "e" + "9" * 12, "e", "e+"]))
    unit = draw(st.sampled_from(UNITS) | st.text(max_size=6))
    space = draw(st.sampled_from(["", " ", "  ", "\t", " " * 3000]))
    return f"{sign}{mant}{exp}{space}{unit}{draw(st.sampled_from(['', ' ', 'x', ' y']))}"


@fuzz_settings(400)
@given(number_text() | st.text(max_size=40), st.sampled_from(sorted(DIMENSIONS)))
def test_number_parser(text, dimension):
    v = within_bound(parse_value, text, dimension, allowed=(UnitError,))
    if v is not None:
        assert math.isfinite(v.si) and math.isfinite(v.half_ulp_si) and v.half_ulp_si >= 0
    within_bound(parse_number, text, allowed=(UnitError,))
    within_bound(parse_printed_number, text, allowed=(UnitError,))
    within_bound(to_int, text, allowed=(UnitError,))


@st.composite
def tolerance_text(draw: st.DrawFn) -> str:
    num = number_text()
    form = draw(st.sampled_from(["±{a}", "+{a}/-{b}", "-{a}/+{b}", "{a}..{b}", "[{a}, {b}]", "[{a}; {b}]",
                                 ">= {a}", "<= {a}", "> {a}", "< {a}", "<= +{a}", ">= -{a}", "{a}", "exact",
                                 "±{a}%", "+{a}%/-{b}%", "within {a}"]))
    return form.format(a=draw(num), b=draw(num))


@fuzz_settings(400)
@given(tolerance_text() | st.text(max_size=60), st.sampled_from(sorted(DIMENSIONS)),
       st.sampled_from(["", "ms", "tok/s", "GiB", "%"]),
       st.floats(-1e12, 1e12), st.floats(-1e12, 1e12))
def test_tolerance_parser(text, dimension, unit, x, ref):
    tol = within_bound(parse_tolerance, text, dimension, unit, allowed=(ToleranceError,))
    if tol is not None:
        assert isinstance(tol.contains(x, ref), bool)
    within_bound(parse_tolerance, [text, text], dimension, unit, allowed=(ToleranceError,))


def test_every_allowed_error_is_a_roofline_error():
    assert all(issubclass(e, RooflineError) for e in (SpecError, ToleranceError, UnitError))
    assert hypothesis.__version__  # the fuzz tests above ran under hypothesis


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_files_load_under_the_fuzz_limits(path):
    # the small limits above still leave every shipped file whole, so the mutants start from a valid file
    spec = loads_spec(TEXTS[path], file=str(path), limits=LIMITS)
    assert spec.predictions


# ----------------------------------------------------------------------------------------------------------------
# other people's files: peers' exports, results files, datasets (issue 23), mutated byte by byte
# ----------------------------------------------------------------------------------------------------------------
PEER_FILES = sorted(p for p in (Path(__file__).resolve().parents[1] / "data" / "peers").rglob("*.json"))
RESULTS_FILES = sorted(PREDICTIONS.glob("recorded/*.results.json"))
DATASET_FILES = sorted((Path(__file__).resolve().parents[1] / "data").glob("*dataset*")) + sorted(
    (Path(__file__).resolve().parents[1] / "data").glob("sharegpt_sample.json"))
BYTES = {p: p.read_bytes() for p in PEER_FILES + RESULTS_FILES + DATASET_FILES}
#: what a byte mutation inserts: JSON syntax, bad bytes, hostile numbers and nesting past every bound
BYTE_FRAGMENTS = [b"[", b"]", b"{", b"}", b",", b":", b'"', b"\\", b"\n", b"\x00", b"\xff\xfe", b"\xc3", b"NaN",
                  b"Infinity", b"-Infinity", b"1e999", b"-1", b"0", b"true", b"null", b'"x"', b"[]", b"{}",
                  b"1" * 400, b"[" * 100_000, b'{"a":' * 20_000, "\ufeff".encode("utf-8")]


@st.composite
def mutated_bytes(draw: st.DrawFn, files: list[Path]) -> tuple[Path, bytes]:
    path = draw(st.sampled_from(files))
    data = BYTES[path]
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["insert", "delete", "duplicate", "truncate"]))
        i = draw(st.integers(0, len(data)))
        if kind == "insert":
            data = data[:i] + draw(st.sampled_from(BYTE_FRAGMENTS) | st.binary(max_size=8)) + data[i:]
        elif kind == "delete":
            data = data[:i] + data[i + draw(st.integers(1, 40)):]
        elif kind == "duplicate":
            data = data[:i] + data[i:i + draw(st.integers(1, 200))] + data[i:]
        else:
            data = data[:i]
    return path, data


def _written(path: Path, data: bytes, folder: Path) -> Path:
    f = folder / path.name
    f.write_bytes(data)
    return f


@fuzz_settings(120)
@given(mutated_bytes(PEER_FILES))
def test_peer_readers_on_mutated_exports(case):
    import tempfile

    from pytest_roofline.measure.results.peers import load_any

    path, data = case
    with tempfile.TemporaryDirectory() as d:
        within_bound(load_any, _written(path, data, Path(d)), allowed=(RooflineError,))


@fuzz_settings(120)
@given(mutated_bytes(RESULTS_FILES))
def test_results_reader_on_mutated_results_files(case):
    import tempfile

    from pytest_roofline.measure.results import load_results

    path, data = case
    with tempfile.TemporaryDirectory() as d:
        within_bound(load_results, _written(path, data, Path(d)), allowed=(RooflineError,))


@fuzz_settings(120)
@given(mutated_bytes(DATASET_FILES))
def test_dataset_reader_on_mutated_datasets(case):
    import tempfile

    from pytest_roofline.format.workloads import DatasetFile

    path, data = case
    with tempfile.TemporaryDirectory() as d:
        f = _written(path, data, Path(d))
        fmt = "jsonl" if path.suffix == ".jsonl" else "sharegpt"
        within_bound(lambda: DatasetFile(f, fmt).count(), allowed=(RooflineError,))
