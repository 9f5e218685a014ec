"""The workload a prediction file describes, resolved once for the load generator and the serving model.

``format.workloads`` checked the ``workload:`` section into plain data; :func:`resolve` turns it into the
objects of ``model.workload`` (length distributions, a dataset's token lengths, the prefix share, a ramp-up)
that both ``LoadSpec`` and ``serving.Workload`` take, so both draw the same per-request lengths.

A dataset's lengths are in tokens, so a dataset needs a tokenizer: ``workload.dataset.tokenizer`` (a
``tokenizer.json``), else the served model's own ``tokenizer.json`` when the model is a local folder (the
project's tiny model is), else none. The load generator sends a dataset's prompts as token ids (so the server
counts exactly the tokens the simulator simulates) and refuses a dataset without a tokenizer; the serving model
then uses a chars/4 estimate (``model.workload.estimate_tokens``), flagged ``estimated`` in the results.
Tokenized lengths are kept per (file sha256, tokenizer sha256), in this process and under
``~/.cache/pytest-roofline/datasets/``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_roofline.errors import WorkloadError
from pytest_roofline.model import workload as wl

__all__ = ["ResolvedWorkload", "resolve", "tokenizer_path", "realised"]

_MEM: dict[tuple[str, str], tuple[tuple[int, ...], tuple[int | None, ...], tuple[tuple[int, ...], ...]]] = {}


@dataclass(frozen=True)
class ResolvedWorkload:
    """The shared description of a file's requests (``None`` / 0: fixed lengths, no dataset, no prefix)."""

    input_dist: wl.LengthDist | None = None
    output_dist: wl.LengthDist | None = None
    dataset: wl.DatasetLengths | None = None
    dataset_prompts: tuple[tuple[int, ...], ...] = ()
    prefix_share: float = 0.0
    shared_prefix_len: int = 0
    ramp_up: wl.RampUp | None = None

    def load_kwargs(self) -> dict[str, Any]:
        """The ``LoadSpec`` fields."""
        return {"input_dist": self.input_dist, "output_dist": self.output_dist, "dataset": self.dataset,
                "dataset_prompts": self.dataset_prompts, "prefix_share": self.prefix_share,
                "ramp_up": self.ramp_up}

    def serving_kwargs(self) -> dict[str, Any]:
        """The ``serving.workload_for_point`` arguments."""
        kw: dict[str, Any] = {"dataset": self.dataset, "prefix_share": self.prefix_share,
                              "shared_prefix_len": self.shared_prefix_len, "ramp_up": self.ramp_up}
        if self.input_dist is not None:
            kw["input_len"] = self.input_dist
        if self.output_dist is not None:
            kw["output_len"] = self.output_dist
        return kw

    def to_dict(self) -> dict[str, Any]:
        """The workload as run, for the results file."""
        return {"input_len": self.input_dist.to_dict() if self.input_dist else None,
                "output_len": self.output_dist.to_dict() if self.output_dist else None,
                "dataset": self.dataset.to_dict() if self.dataset else None,
                "prefix_share": self.prefix_share, "shared_prefix_len": self.shared_prefix_len,
                "ramp_up": self.ramp_up.to_dict() if self.ramp_up else None}


def tokenizer_path(workload: Mapping[str, Any], model_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The tokenizer.json a dataset is tokenized with: the dataset's own, else the model folder's, else None."""
    ds = workload.get("dataset") or {}
    if ds.get("tokenizer"):
        return Path(ds["tokenizer"])
    if model_dir is not None:
        p = Path(model_dir) / "tokenizer.json"
        if p.is_file():
            return p
    return None


def _sha_file(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _cache_file(sha: str, tok_sha: str) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "pytest-roofline" / "datasets" / f"{sha[:16]}-{tok_sha[:16]}.json"


def _tokenize(ds: Mapping[str, Any], tok: Path | None, need_ids: bool
              ) -> tuple[tuple[int, ...], tuple[int | None, ...], tuple[tuple[int, ...], ...], str, bool]:
    from pytest_roofline.format.workloads import read_text

    text, sha = read_text(Path(ds["path"]))
    if sha != ds.get("sha256"):
        raise WorkloadError(f"{ds['path']} changed since the prediction file was read (sha256 differs)")
    if ds["format"] == "sharegpt":
        entries = wl.parse_sharegpt(text, ds["path"])
    else:
        out_f = ds.get("output_field")
        entries = wl.parse_jsonl(text, ds["path"], prompt_field=ds.get("prompt_field", "prompt"),
                                 output_fields=(out_f,) if out_f else ("output_len", "max_tokens"))
    if tok is None:
        if need_ids:
            raise WorkloadError(f"the dataset {ds['source']} needs a tokenizer to be sent as token ids: give "
                                "workload.dataset.tokenizer: path/to/tokenizer.json")
        ins = tuple(wl.estimate_tokens(e.prompt) for e in entries)
        outs = tuple(e.output_len if e.output_len is not None
                     else (wl.estimate_tokens(e.completion) if e.completion is not None else None) for e in entries)
        return ins, outs, (), "chars/4 estimate", True
    tok_sha = _sha_file(tok)
    key = (sha, tok_sha)
    if key in _MEM and (_MEM[key][2] or not need_ids):
        i, o, p = _MEM[key]
        return i, o, p, str(tok), False
    cache = _cache_file(sha, tok_sha)
    if not need_ids and cache.is_file():
        try:
            data = json.loads(cache.read_text())
            i, o = tuple(data["input_lens"]), tuple(data["output_lens"])
            _MEM.setdefault(key, (i, o, ()))
            return i, o, (), str(tok), False
        except (OSError, ValueError, KeyError):
            pass
    from tokenizers import Tokenizer

    t = Tokenizer.from_file(str(tok))
    # the token ids a prompt is sent as; no special tokens added: the server counts exactly these
    prompts = tuple(tuple(t.encode(e.prompt, add_special_tokens=False).ids) for e in entries)
    if any(not p for p in prompts):
        k = next(n for n, p in enumerate(prompts) if not p)
        raise WorkloadError(f"{ds['source']}: the prompt of line {entries[k].line} is no token", line=entries[k].line)
    ins = tuple(len(p) for p in prompts)
    outs = tuple(e.output_len if e.output_len is not None
                 else (max(1, len(t.encode(e.completion, add_special_tokens=False).ids))
                       if e.completion is not None else None) for e in entries)
    _MEM[key] = (ins, outs, prompts)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"input_lens": ins, "output_lens": outs, "source": ds["source"]}))
    except OSError:
        pass
    return ins, outs, prompts, str(tok), False


def resolve(workload: Mapping[str, Any], *, model_dir: str | os.PathLike[str] | None = None,
            for_load: bool = False) -> ResolvedWorkload:
    """The shared description of ``workload`` (a Spec's plain ``workload`` dict). ``for_load``: the load
    generator's (a dataset's prompts tokenized to ids, a tokenizer required)."""
    kw: dict[str, Any] = {}
    for key in ("input_dist", "output_dist"):
        if workload.get(key) is not None:
            kw[key] = wl.parse_length(workload[key], f"workload.{key.replace('_dist', '_len')}")
    if workload.get("prefix_share"):
        kw["prefix_share"] = float(workload["prefix_share"])
    if workload.get("shared_prefix_len"):
        kw["shared_prefix_len"] = int(workload["shared_prefix_len"])
    if workload.get("ramp_up"):
        r = workload["ramp_up"]
        kw["ramp_up"] = wl.RampUp(r["strategy"], float(r["start_rps"]), float(r["end_rps"]))
    ds = workload.get("dataset")
    if ds:
        tok = tokenizer_path(workload, model_dir)
        ins, outs, prompts, tok_name, estimated = _tokenize(ds, tok, for_load)
        kw["dataset"] = wl.DatasetLengths(ins, outs, order=ds.get("order", "sequential"), source=ds["source"],
                                          sha256=ds["sha256"], estimated=estimated, tokenizer=tok_name)
        kw["dataset_prompts"] = prompts
    return ResolvedWorkload(**kw)


def realised(records: Any) -> dict[str, Any]:
    """Mean, p50, p99, min and max of the measured requests' input and output lengths (``RequestRecord``s)."""
    meas = [r for r in records if not r.warmup]
    return {"input_len": wl.length_stats([r.input_len for r in meas]),
            "output_len": wl.length_stats([r.output_len for r in meas])}
