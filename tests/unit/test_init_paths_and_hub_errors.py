"""Three things a first user of ``roofline init`` tripped on:

* ``--model qwen14b/config.json -o predictions/tp2.yaml`` wrote the path as typed, but a prediction file's relative
  ``model:`` path is read from the file's own folder, so ``roofline check predictions/tp2.yaml`` then said "no
  config.json at .../predictions/qwen14b/config.json": init writes it relative to the output's folder;
* ``roofline check`` on the fresh file said "predicted: '' is not a number", with an example of another size or
  unit ("56.34 GiB" for the KV bytes of one token, "22,959" for a parameter count): a blank now says it is blank,
  the unit to write it in, and an example in that quantity's own unit, at its file:line;
* with no network, a Hub id said the model "has no config.json on the Hugging Face Hub" (after about 24 s of
  retries): huggingface_hub's LocalEntryNotFoundError (the Hub was not reached, the cache does not hold the file)
  is an EntryNotFoundError too. Here the exception types huggingface_hub raises, from stand-ins (tests/unit opens
  no socket); the real HTTP — a closed port, a 404, a served config — is integration/test_hub_http.py.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import huggingface_hub
import pytest
import yaml
from huggingface_hub import errors as hub_errors
from support.first_file import HAND_INK, fill
from support.hf_cache import QWEN25_14B_ID, QWEN25_14B_INSTRUCT

from pytest_roofline import cli
from pytest_roofline.errors import SpecError, UnknownModelError
from pytest_roofline.format import _expand
from pytest_roofline.format._reader import NodeReader
from pytest_roofline.format._types import PredictedKind
from pytest_roofline.format.spec import load_spec
from pytest_roofline.model import hf_hub
from pytest_roofline.model.presets import PRESETS, get_model
from pytest_roofline.quantities.quantity import QuantityKind
from pytest_roofline.quantities.registry import QUANTITIES


def _model_line(f: Path) -> str:
    return next(line for line in f.read_text().splitlines() if line.startswith("model: "))[len("model: "):]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder as the working directory, with Qwen2.5-14B-Instruct's config.json under models/qwen14b/."""
    (tmp_path / "models" / "qwen14b").mkdir(parents=True)
    (tmp_path / "models" / "qwen14b" / "config.json").write_text(json.dumps(QWEN25_14B_INSTRUCT))
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ---- a model path is written relative to the output file's folder ------------------------------------------------
def test_init_writes_a_relative_model_path_from_the_files_folder_and_check_reads_it(
        project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["init", "--gpu", "h100", "--model", "models/qwen14b/config.json",
                     "-o", "predictions/sub/x.yaml"]) == 0  # the folders are made
    f = project / "predictions" / "sub" / "x.yaml"
    assert _model_line(f) == "../../models/qwen14b/config.json"
    assert "models/qwen14b/config.json" in capsys.readouterr().err  # the rewrite is said, not silent
    assert Path(load_spec(f).model).resolve() == (project / "models" / "qwen14b" / "config.json").resolve()
    f.write_text(fill(f.read_text(), HAND_INK))
    assert cli.main(["check", "predictions/sub/x.yaml"]) == 0, capsys.readouterr().out
    monkeypatch.chdir(f.parent)  # and from inside its folder, as pytest would read it there
    assert cli.main(["check", "x.yaml"]) == 0, capsys.readouterr().out


def test_a_model_folder_in_the_same_folder_and_a_dot_path_are_rewritten_too(project: Path) -> None:
    (project / "predictions").mkdir()
    assert cli.main(["init", "--gpu", "h100", "--model", "./models/qwen14b", "-o", "models/x.yaml"]) == 0
    assert _model_line(project / "models" / "x.yaml") == "qwen14b"
    assert Path(load_spec(project / "models" / "x.yaml").model).resolve() == (project / "models" / "qwen14b").resolve()


def test_an_absolute_model_path_stays_as_the_user_gave_it(project: Path) -> None:
    given = str(project / "models" / "qwen14b" / "config.json")
    assert cli.main(["init", "--gpu", "h100", "--model", given, "-o", "predictions/x.yaml"]) == 0
    assert _model_line(project / "predictions" / "x.yaml") == given


def test_stdout_a_preset_and_a_hub_id_are_written_as_given(project: Path, hub_cache: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["init", "--gpu", "h100", "--model", "models/qwen14b/config.json"]) == 0
    assert "\nmodel: models/qwen14b/config.json\n" in capsys.readouterr().out  # stdout: no folder to be relative to
    for model in ("qwen3-8b", QWEN25_14B_ID):
        out = project / "predictions" / f"{model.replace('/', '-')}.yaml"
        assert cli.main(["init", "--gpu", "h100", "--model", model, "-o", str(out)]) == 0
        assert _model_line(out) == model


# ---- a blank predicted: says it is blank, in the quantity's own unit ---------------------------------------------
def _check_out(f: Path, capsys: pytest.CaptureFixture[str]) -> dict[int, str]:
    """``roofline check``'s error for each line of ``f``: {line: message and fix}."""
    assert cli.main(["check", str(f)]) == 1
    out = capsys.readouterr().out
    return {int(m.group(1)): m.group(2) for m in re.finditer(rf"^{re.escape(str(f))}:(\d+): (.*\n    fix: .*)$",
                                                             out, re.M)}


def test_check_on_a_fresh_init_file_says_blank_with_an_example_in_each_quantitys_unit(
        hub_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "x.yaml"
    assert cli.main(["init", "--gpu", "h100", "--model", QWEN25_14B_ID, "-o", str(f)]) == 0
    capsys.readouterr()
    lines = f.read_text().splitlines()
    blanks = {}  # the line of each blank predicted: -> its quantity
    for n, line in enumerate(lines, 1):
        if line.startswith("    predicted:"):
            blanks[n] = next(x for x in reversed(lines[:n]) if x.startswith("    quantity: ")).split(": ")[1]
    blank_of = {q: n for n, q in reversed(blanks.items())}  # a quantity's first blank
    errors = _check_out(f, capsys)
    assert set(errors) == set(blanks)  # every blank, each at its own file:line
    for text in errors.values():
        assert text.startswith("predicted: blank: write your predicted value "), text
        assert "is not a number" not in text
    # the example fits the quantity: KV bytes of one token in B, not GiB; a parameter count in billions
    assert errors[blank_of["kv_bytes_per_token"]].endswith("fix: write e.g. 131,072 B")
    assert "in bytes" in errors[blank_of["kv_bytes_per_token"]]
    assert errors[blank_of["param_count"]].endswith("fix: write e.g. 7.5e9")
    assert "a plain number" in errors[blank_of["param_count"]]
    assert errors[blank_of["weight_bytes"]].endswith("fix: write e.g. 15.0 GB")
    assert "tok/s" in errors[blank_of["output_throughput"]]
    assert "or none" in errors[blank_of["knee_concurrency"]]  # a knee that may not exist
    assert errors[blank_of["littles_law_ratio"]].endswith("fix: write e.g. 1.00")


def test_a_blank_true_false_or_word_prediction_names_its_choices(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "x.yaml"
    f.write_text("hardware: h100-sxm\nmodel: qwen3-8b\npredictions:\n"
                 "  - id: fits\n    quantity: kv_pool_fits\n    at: {batch: 8, pool: 30 GiB}\n    predicted:\n"
                 "  - id: bound\n    quantity: decode_bound\n    at: {batch: 8}\n    predicted: ''\n")
    errors = _check_out(f, capsys)
    assert errors[7].startswith("predicted: blank: ") and "true or false" in errors[7]
    assert errors[11].startswith("predicted: blank: ") and "memory" in errors[11] and "compute" in errors[11]


@pytest.mark.parametrize("name", [q.name for q in QUANTITIES.values()
                                  if q.kind in (QuantityKind.NUMBER, QuantityKind.OPTIONAL_NUMBER)])
def test_every_blank_example_reads_back_as_a_value_of_its_quantity(name: str) -> None:
    q = QUANTITIES[name]
    ctx = NodeReader("x.yaml")

    def node(text: str) -> yaml.Node:
        doc = yaml.compose(f"predicted: {text}")
        assert isinstance(doc, yaml.MappingNode)
        value: yaml.Node = doc.value[0][1]
        return value

    with pytest.raises(SpecError) as exc:
        _expand._predicted(ctx, q, node(""), "predicted")
    assert exc.value.line == 1 and exc.value.message.startswith("predicted: blank: write your predicted value ")
    example = exc.value.hint.removeprefix("write e.g. ").split(", or ")[0].split(" or ")[0]
    assert _expand._predicted(ctx, q, node(example), "predicted").kind is PredictedKind.NUMBER


# ---- a Hub that was not reached is a network failure, not a missing file -----------------------------------------
@pytest.fixture
def online(hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Hub online (HF_HUB_OFFLINE unset) and its one HEAD answered; the URLs it was asked, in order."""
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    monkeypatch.delenv("HF_HUB_ETAG_TIMEOUT", raising=False)
    asked: list[str] = []

    def head(url: str, **kwargs: Any) -> None:
        asked.append(url)
        assert kwargs["timeout"] == hf_hub.TIMEOUT_S  # bounded: seconds, not huggingface_hub's retries

    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", head)
    return asked


def _local_entry_not_found(cause: BaseException) -> BaseException:
    """What hf_hub_download raises when its HEAD failed and the cache does not hold the file (its cause chained)."""
    exc = hub_errors.LocalEntryNotFoundError("An error happened while trying to locate the file on the Hub and we "
                                             "cannot find the requested files in the local cache.")
    exc.__cause__ = cause
    return exc


def _raising(exc: BaseException) -> Any:
    def download(*args: Any, **kwargs: Any) -> Any:
        raise exc
    return download


def test_a_hub_not_reached_is_a_network_failure_with_the_ways_on(online: list[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    cause = OSError("[Errno -2] Name or service not known")
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", _raising(_local_entry_not_found(cause)))
    with pytest.raises(UnknownModelError) as exc:
        get_model("Qwen/Qwen2.5-32B-Instruct")
    msg = str(exc.value)
    assert "has no config.json" not in msg  # the bug
    assert "could not reach huggingface.co" in msg and "Name or service not known" in msg
    assert "HF_HUB_OFFLINE=1" in msg and "hf download Qwen/Qwen2.5-32B-Instruct config.json" in msg
    assert ", ".join(PRESETS) in msg and "params:" in msg  # every preset; the model by its numbers
    assert "\n" not in msg
    assert online == ["https://huggingface.co/Qwen/Qwen2.5-32B-Instruct/resolve/main/config.json"]


def test_the_probe_failing_is_told_before_any_download(online: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(url: str, **kwargs: Any) -> None:
        raise ConnectionRefusedError("[Errno 111] Connection refused")

    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", refused)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", _raising(AssertionError("no download after a failure")))
    monkeypatch.setenv("HF_ENDPOINT", "http://hub.internal:8080/")  # read now, named in the message
    with pytest.raises(UnknownModelError) as exc:
        get_model("org/some-14b")
    assert "could not reach hub.internal:8080 (ConnectionRefusedError: [Errno 111] Connection refused" in str(exc.value)


def test_a_timeout_names_the_knob_that_waits_longer(online: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", _raising(TimeoutError("timed out")))
    with pytest.raises(UnknownModelError) as exc:
        get_model("org/some-14b")
    assert "HF_HUB_ETAG_TIMEOUT" in str(exc.value) and "could not reach huggingface.co" in str(exc.value)


def test_hf_hub_etag_timeout_bounds_the_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_ETAG_TIMEOUT", raising=False)
    assert hf_hub.timeout_s() == hf_hub.TIMEOUT_S
    for text, want in (("2", 2.0), ("0.5", 0.5), ("nonsense", hf_hub.TIMEOUT_S), ("0", hf_hub.TIMEOUT_S)):
        monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", text)
        assert hf_hub.timeout_s() == want


def test_a_file_the_hub_answered_404_for_is_still_missing(online: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def not_found(url: str, **kwargs: Any) -> None:
        exc = hub_errors.EntryNotFoundError.__new__(hub_errors.EntryNotFoundError)
        Exception.__init__(exc, "404 Client Error. Entry Not Found")
        raise exc

    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", not_found)
    with pytest.raises(UnknownModelError) as exc:
        get_model("org/weights-only-14b")
    assert "has no config.json on the Hugging Face Hub" in str(exc.value)
    assert "could not reach" not in str(exc.value)


def test_offline_is_still_the_cache_alone(hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", _raising(AssertionError("asked the Hub offline")))
    assert get_model(QWEN25_14B_ID).num_layers == 48
    with pytest.raises(UnknownModelError, match="HF_HUB_OFFLINE is set"):
        get_model("org/not-cached-14b")
