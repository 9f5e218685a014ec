"""The workload section's distributions, datasets, prefix share and ramp-up, read with file:line errors.

``format._sections`` hands the YAML nodes of these ``workload:`` fields here, with its ``NodeReader``; what
comes back is plain data (the Spec's ``workload`` dict stays JSON-able), which ``model.workload.parse_length``
and ``measure.workloads`` turn into the one description the load generator and the serving model share:

* ``input_len`` / ``output_len``: an integer (fixed), or ``{dist: uniform, min: 64, max: 512}``,
  ``{dist: normal, mean: 256, std: 64, min: 16, max: 1024}``, ``{dist: fixed, value: 128}``, ``{dist: file,
  path: lens.txt, order: sample|sequential}`` (one length per line, or a JSON list; the file's lengths are read
  here, with its sha256). The dict keeps ``input_len`` as the nominal mean (the decode roofline's length) and
  puts the distribution in ``input_dist``.
* ``dataset: {path: prompts.jsonl, format: jsonl|sharegpt, prompt_field: prompt, output_field: output_len,
  order: sequential|sample, tokenizer: path}``: checked here (every line parses, with the line of a bad one);
  tokenized by ``measure.workloads``.
* ``prefix_share: 0.5`` (a number in [0, 1)); ``ramp_up: {strategy: linear|exponential, start_rps:, end_rps:}``.

Relative paths are taken from the prediction file's folder.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from pytest_roofline import bounded
from pytest_roofline.errors import BoundedInputError, WorkloadError
from pytest_roofline.format._reader import NodeReader
from pytest_roofline.model import workload as wl

__all__ = ["parse_field", "DATASET_FORMATS", "read_text", "DatasetFile", "MAX_LENGTH_FILE_BYTES", "MAX_SHAREGPT_BYTES",
           "MAX_DATASET_LINE_BYTES"]

DATASET_FORMATS = ("jsonl", "sharegpt")
_DATASET_KEYS = {"path", "format", "prompt_field", "output_field", "order", "tokenizer"}


#: the largest length file (read whole: a JSON list, or one length a line) and ShareGPT file (one JSON document,
#: read whole; vLLM's ShareGPT_V3_unfiltered_cleaned_split.json is 642 MB). A JSONL dataset is streamed a line
#: at a time, each line at most MAX_DATASET_LINE_BYTES, so its size is not bounded.
MAX_LENGTH_FILE_BYTES = 64 * bounded.MIB
MAX_SHAREGPT_BYTES = 1024 * bounded.MIB
MAX_DATASET_LINE_BYTES = 64 * bounded.MIB


def read_text(path: Path, *, max_bytes: int = MAX_LENGTH_FILE_BYTES, what: str = "the file") -> tuple[str, str]:
    """The text of a workload file read whole and its sha256 (hex); :class:`WorkloadError` for a file that is
    not a regular file, is over ``max_bytes`` or is not UTF-8."""
    try:
        data = bounded.read_bytes(path, max_bytes=max_bytes, what=what)
        return bounded.decode_utf8(data, str(path)), hashlib.sha256(data).hexdigest()
    except BoundedInputError as exc:
        raise WorkloadError(str(exc), line=exc.line) from None


class DatasetFile:
    """A ``workload.dataset`` file, parsed one way for the prediction file's check (which counts its entries)
    and the load generator (which tokenizes them): the one home of the dispatch on its format.

    :meth:`entries` yields the entries in file order, streaming a JSONL file a line at a time (a 1 GB dataset in
    a line's memory and linear time); ``sha256`` is the file's digest once :meth:`entries` is exhausted."""

    def __init__(self, path: str | Path, fmt: str, *, prompt_field: str | None = None,
                 output_field: str | None = None):
        self.path, self.format = Path(path), fmt
        self.prompt_field = prompt_field or "prompt"
        self.output_fields = (output_field,) if output_field else ("output_len", "max_tokens")
        self.sha256: str | None = None

    @classmethod
    def of(cls, ds: Mapping[str, Any]) -> DatasetFile:
        """The file of a checked ``workload.dataset`` dict (the Spec's)."""
        return cls(ds["path"], ds["format"], prompt_field=ds.get("prompt_field"), output_field=ds.get("output_field"))

    def entries(self) -> Iterator[wl.DatasetEntry]:
        source = str(self.path)
        if self.format == "sharegpt":
            text, sha = read_text(self.path, max_bytes=MAX_SHAREGPT_BYTES, what="the dataset")
            yield from wl.parse_sharegpt(text, source)
            self.sha256 = sha
            return
        reader = bounded.LineReader(self.path, what="the dataset", max_line_bytes=MAX_DATASET_LINE_BYTES)
        count = 0
        try:
            for lineno, line in reader.lines():
                entry = wl.jsonl_entry(line, lineno, source, prompt_field=self.prompt_field,
                                       output_fields=self.output_fields)
                if entry is not None:
                    count += 1
                    yield entry
        except BoundedInputError as exc:
            raise WorkloadError(str(exc), line=exc.line) from None
        if not count:
            raise WorkloadError(f"{source}: holds no prompts")
        self.sha256 = reader.sha256

    def count(self) -> int:
        """The number of entries, every one checked, none kept."""
        return sum(1 for _ in self.entries())


def _resolve(ctx: NodeReader, node: yaml.Node, raw: Any, what: str) -> Path:
    if not isinstance(raw, str) or not raw:
        raise ctx.err(node, f"{what} must be a file path")
    p = Path(raw).expanduser()
    if not p.is_absolute():
        p = Path(ctx.file).resolve().parent / p
    if not p.is_file():
        raise ctx.err(node, f"{what}: no such file: {p}", "give a path relative to the prediction file")
    return p


def _dataset_err(ctx: NodeReader, node: yaml.Node, exc: WorkloadError) -> Exception:
    hint = f"line {exc.line} of the dataset file" if exc.line else ""
    err: Exception = ctx.err(node, str(exc), hint)
    return err


def _length(ctx: NodeReader, key: str, node: yaml.Node) -> dict[str, Any]:
    what = f"workload.{key}"
    if isinstance(node, yaml.ScalarNode):
        return {key: ctx.integer(node, what)}  # a fixed length: the setup refuses an impossible one at its line
    if not isinstance(node, yaml.MappingNode):
        raise ctx.err(node, f"{what} must be a whole number of tokens or a distribution",
                      "write e.g. input_len: 512 or input_len: {dist: uniform, min: 64, max: 512}")
    raw = ctx.plain(node)
    if raw.get("dist") == "file":
        extra = set(raw) - {"dist", "path", "order"}
        if extra:
            raise ctx.err(node, f"{what}: a file length takes path and order, not {', '.join(sorted(extra))}")
        p = _resolve(ctx, node, raw.get("path"), f"{what}.path")
        try:
            text, sha = read_text(p, what="the length file")
            values = wl.parse_length_file(text, str(p))
        except WorkloadError as exc:
            raise _dataset_err(ctx, node, exc) from None
        raw = {"dist": "file", "values": values, "order": raw.get("order", "sample"), "source": raw["path"],
               "path": str(p), "sha256": sha}
    try:
        dist = wl.parse_length(raw, what)
    except WorkloadError as exc:
        raise ctx.err(node, str(exc), "write e.g. {dist: uniform, min: 64, max: 512} or "
                                      "{dist: normal, mean: 256, std: 64}") from None
    return {key: dist.mean, key.replace("_len", "_dist"): raw}


def _dataset(ctx: NodeReader, node: yaml.Node) -> dict[str, Any]:
    if not isinstance(node, yaml.MappingNode):
        raise ctx.err(node, "workload.dataset must be a mapping", "write e.g. dataset: {path: prompts.jsonl}")
    raw = ctx.plain(node)
    extra = set(raw) - _DATASET_KEYS
    if extra:
        raise ctx.err(node, f"workload.dataset takes {', '.join(sorted(_DATASET_KEYS))}, not "
                            f"{', '.join(sorted(extra))}")
    p = _resolve(ctx, node, raw.get("path"), "workload.dataset.path")
    fmt = raw.get("format") or ("jsonl" if p.suffix == ".jsonl" else "sharegpt")
    if fmt not in DATASET_FORMATS:
        raise ctx.err(node, f"workload.dataset.format must be jsonl or sharegpt, not {fmt!r}")
    order = raw.get("order", "sequential")
    if order not in wl.ORDERS:
        raise ctx.err(node, f"workload.dataset.order must be sequential or sample, not {order!r}")
    out_f = raw.get("output_field")
    dataset = DatasetFile(p, fmt, prompt_field=str(raw.get("prompt_field") or "prompt"),
                          output_field=str(out_f) if out_f else None)
    try:
        count = dataset.count()
    except WorkloadError as exc:
        raise _dataset_err(ctx, node, exc) from None
    out = {"path": str(p), "source": raw["path"], "format": fmt, "sha256": dataset.sha256, "order": order,
           "entries": count}
    for k in ("prompt_field", "output_field"):
        if raw.get(k):
            out[k] = str(raw[k])
    if raw.get("tokenizer"):
        out["tokenizer"] = str(_resolve_tokenizer(ctx, node, raw["tokenizer"]))
    return {"dataset": out}


def _resolve_tokenizer(ctx: NodeReader, node: yaml.Node, raw: Any) -> Path:
    p = Path(str(raw)).expanduser()
    if not p.is_absolute():
        p = Path(ctx.file).resolve().parent / p
    if p.is_dir():
        p = p / "tokenizer.json"
    if not p.is_file():
        raise ctx.err(node, f"workload.dataset.tokenizer: no tokenizer.json at {p}")
    return p


def _ramp_up(ctx: NodeReader, node: yaml.Node) -> dict[str, Any]:
    if not isinstance(node, yaml.MappingNode):
        raise ctx.err(node, "workload.ramp_up must be a mapping",
                      "write e.g. ramp_up: {strategy: linear, start_rps: 1, end_rps: 8}")
    raw = ctx.plain(node)
    extra = set(raw) - {"strategy", "start_rps", "end_rps"}
    if extra:
        raise ctx.err(node, f"workload.ramp_up takes strategy, start_rps and end_rps, not {', '.join(sorted(extra))}")
    try:
        ramp = wl.RampUp(str(raw.get("strategy")), raw.get("start_rps"), raw.get("end_rps"))
    except WorkloadError as exc:
        raise ctx.err(node, str(exc)) from None
    return {"ramp_up": ramp.to_dict()}


def parse_field(ctx: NodeReader, key: str, node: yaml.Node) -> dict[str, Any]:
    """The plain entries one of these workload fields adds to the Spec's ``workload`` dict."""
    if key in ("input_len", "output_len"):
        return _length(ctx, key, node)
    if key == "dataset":
        return _dataset(ctx, node)
    if key == "ramp_up":
        return _ramp_up(ctx, node)
    if key == "prefix_share":
        share = ctx.number(node, "workload.prefix_share")
        if not 0.0 <= share < 1.0:
            raise ctx.err(node, f"workload.prefix_share must be in [0, 1), got {share:g}",
                          "the share of each prompt's tokens common to all requests, e.g. 0.5")
        return {"prefix_share": float(share)}
    raise KeyError(key)
