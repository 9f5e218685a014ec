"""A model named by its Hub id (issue 24, review finding M1) and model paths read from the prediction file's folder
(M2). The Hub is never contacted: the Hugging Face cache is laid out on disk in the test (support.hf_cache), and
the one download a test needs is a stand-in for ``huggingface_hub.hf_hub_download`` (tests/unit refuses sockets).

Qwen/Qwen2.5-14B-Instruct by hand (support/hf_cache.py): 14,770,033,664 parameters, bf16 → 29,540,067,328 B of
weights; 48 layers × 8 KV heads × 128 dims × 2 (K, V) × 2 B = 196,608 B of KV per token.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import huggingface_hub
import pytest
from huggingface_hub import errors as hub_errors
from support.hf_cache import QWEN25_14B_ID, QWEN25_14B_INSTRUCT, QWEN25_14B_PARAMS, lay_out

from pytest_roofline import cli
from pytest_roofline.errors import SpecError, UnknownModelError, UnsupportedModelError
from pytest_roofline.format.spec import load_spec
from pytest_roofline.model.presets import get_model

KV_PER_TOKEN = 48 * 8 * 128 * 2 * 2


@pytest.fixture(autouse=True)
def _the_hub_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """model/hf_hub.py asks the Hub once (one HEAD, no retries, huggingface_hub.get_hf_file_metadata) before a
    download, so a network failure is told in seconds; here the Hub answers it, and each test's stand-in for
    hf_hub_download says the rest (the real HEAD, against a server on 127.0.0.1: integration/test_hub_http.py)."""
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", lambda *args, **kwargs: None)


def _no_download(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError(f"the Hub was asked for {args}: a cached config must not be downloaded")


def test_a_hub_id_resolves_from_the_local_cache(hub_cache: Path) -> None:
    arch = get_model(QWEN25_14B_ID)
    assert arch.param_count() == QWEN25_14B_PARAMS
    assert arch.num_layers == 48 and arch.num_kv_heads == 8 and arch.head_dim == 128
    assert "models--Qwen--Qwen2.5-14B-Instruct" in arch.source


def test_the_cache_comes_first_when_online_too(hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", _no_download)
    assert get_model(QWEN25_14B_ID).param_count() == QWEN25_14B_PARAMS


def test_offline_and_not_cached_is_one_line_saying_so(hub_cache: Path) -> None:
    with pytest.raises(UnknownModelError) as exc:
        get_model("Qwen/Qwen2.5-32B-Instruct")
    msg = str(exc.value)
    assert "\n" not in msg and "HF_HUB_OFFLINE" in msg and "not in the local Hugging Face cache" in msg
    assert "params:" in msg  # the way out: the model by its numbers
    assert "7b" not in msg.lower()  # never a model of another size


def _raise(exc: BaseException) -> Any:
    def download(*args: Any, **kwargs: Any) -> Any:
        raise exc
    return download


def _bare(cls: type[BaseException], text: str) -> BaseException:
    exc = cls.__new__(cls)
    Exception.__init__(exc, text)
    return exc


def test_a_gated_model_is_one_line_naming_hf_token(hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(huggingface_hub, "hf_hub_download",
                        _raise(_bare(hub_errors.GatedRepoError, "403 Client Error: access to model is restricted")))
    with pytest.raises(UnknownModelError) as exc:
        get_model("meta-llama/Llama-3.3-70B-Instruct")
    msg = str(exc.value)
    assert "\n" not in msg and "gated" in msg and "HF_TOKEN" in msg


def test_an_unreachable_hub_is_one_line(hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", _raise(ConnectionError("no route to host")))
    with pytest.raises(UnknownModelError) as exc:
        get_model("mistralai/Mistral-Small-24B-Instruct-2501")
    msg = str(exc.value)
    assert "\n" not in msg and "could not be reached" in msg and "hf download" in msg


def test_online_only_config_files_are_fetched_with_the_token(hub_cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    snap = lay_out(tmp_path / "elsewhere", "org/gated-14b", {"config.json": QWEN25_14B_INSTRUCT})
    asked: list[tuple[str, str, Any]] = []

    def download(repo_id: str, filename: str, **kwargs: Any) -> str:
        asked.append((repo_id, filename, kwargs.get("token")))
        if filename != "config.json":
            raise _bare(hub_errors.EntryNotFoundError, "404")
        return str(snap / filename)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    assert get_model("org/gated-14b").param_count() == QWEN25_14B_PARAMS
    assert {f for _r, f, _t in asked} <= {"config.json", "quantize_config.json", "quant_config.json"}
    assert all(token == "hf_secret" for _r, _f, token in asked)


def test_a_quantization_config_beside_config_json_is_read(hub_cache: Path) -> None:
    lay_out(hub_cache, "org/q14b-gptq", {"config.json": QWEN25_14B_INSTRUCT,
                                         "quantize_config.json": {"bits": 4, "group_size": 128, "desc_act": False,
                                                                  "sym": True}})
    arch = get_model("org/q14b-gptq")
    assert arch.quantization_config is not None
    assert arch.quantization_config["quant_method"] == "gptq" and arch.quantization_config["bits"] == 4


def test_an_architecture_it_cannot_count_names_model_type_and_the_way_out(hub_cache: Path) -> None:
    lay_out(hub_cache, "org/rwkv-14b", {"config.json": {"model_type": "rwkv7", "hidden_size": 4096}})
    with pytest.raises(UnsupportedModelError) as exc:
        get_model("org/rwkv-14b")
    msg = str(exc.value)
    assert "\n" not in msg and "'rwkv7'" in msg
    assert "params: P, num_layers: L, num_kv_heads: K, head_dim: D" in msg


def test_an_unknown_name_never_suggests_a_model_of_another_size() -> None:
    # before: "unknown model 'qwen2.5-14b-instruct'. Did you mean: qwen2.5-7b-instruct, qwen2.5-7b?"
    with pytest.raises(UnknownModelError) as exc:
        get_model("qwen2.5-14b-instruct")
    assert "Did you mean" not in str(exc.value)
    with pytest.raises(UnknownModelError) as exc:
        get_model("qwen2.5-7b-instrct")  # a typo of the same size is still suggested
    assert "Did you mean: qwen2.5-7b-instruct" in str(exc.value)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


HUB_FILE = """\
    hardware: h100-sxm
    model: Qwen/Qwen2.5-14B-Instruct
    predictions:
      - id: params
        quantity: param_count
        predicted: 14.77e9
      - id: kv
        quantity: kv_bytes_per_token
        predicted: 196,608 B
"""


def test_a_prediction_file_with_a_hub_id_checks_offline(hub_cache: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path / "predictions" / "x.yaml", HUB_FILE)
    spec = load_spec(f)
    assert spec.model == QWEN25_14B_ID
    assert cli.main(["check", str(f)]) == 0, capsys.readouterr()


def test_roofline_predict_takes_a_hub_id_offline(hub_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    rc = cli.main(["predict", "--gpu", "h100-sxm", "--model", QWEN25_14B_ID, "--batch", "1", "--context", "1000",
                   "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    row = json.loads(out.out.splitlines()[0])
    # B = 1: (29,540,067,328 + 1,000 × 196,608) B ÷ 3.35e12 B/s
    t_mem = (2 * QWEN25_14B_PARAMS + 1000 * KV_PER_TOKEN) / 3.35e12
    assert row["t_mem_ms"] == pytest.approx(t_mem * 1e3, rel=1e-9)


# ---- M2: a model path is read from the prediction file's folder -------------------------------------------------
PATH_FILE = """\
    hardware: h100-sxm
    model: models/qwen14b/config.json
    predictions:
      - id: params
        quantity: param_count
        predicted: 14.77e9
"""


def test_a_model_path_is_read_from_the_files_folder_wherever_pytest_runs(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    folder = tmp_path / "predictions"
    (folder / "models" / "qwen14b").mkdir(parents=True)
    (folder / "models" / "qwen14b" / "config.json").write_text(json.dumps(QWEN25_14B_INSTRUCT))
    f = _write(folder / "x.yaml", PATH_FILE)
    monkeypatch.chdir(tmp_path)  # before: "no config.json at 'models/qwen14b/config.json'" from here
    assert Path(load_spec("predictions/x.yaml").model) == folder / "models" / "qwen14b" / "config.json"
    monkeypatch.chdir(folder)
    assert Path(load_spec("x.yaml").model) == folder / "models" / "qwen14b" / "config.json"
    assert f.is_file()


def test_a_model_path_that_is_not_there_names_the_files_folder(tmp_path: Path) -> None:
    f = _write(tmp_path / "predictions" / "x.yaml", PATH_FILE)
    with pytest.raises(SpecError) as exc:
        load_spec(f)
    text = str(exc.value)
    assert "x.yaml:2" in text and str(tmp_path / "predictions") in text
