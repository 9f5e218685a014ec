"""pytest_roofline.bounded: the one bounded reader of other people's files (issue 23's cases 9.37, 9.43, 9.45,
9.53): depth, size, FIFO, device, UTF-8 and alias bombs are one clear BoundedInputError, never a RecursionError,
a MemoryError or a hang."""

from __future__ import annotations

import hashlib
import json
import os
import time

import pytest
import yaml

from pytest_roofline import bounded
from pytest_roofline.errors import BoundedInputError


def test_json_nested_100000_deep_is_a_clear_error_not_recursion() -> None:
    for text in ("[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000):
        with pytest.raises(BoundedInputError, match="nest more than 64 levels"):
            bounded.loads_json(text, "peer.json")


def test_json_depth_bound_is_exact() -> None:
    # 64 nested lists pass, 65 do not (depth counts the outermost list as 1)
    assert bounded.loads_json("[" * 64 + "]" * 64, "f") == json.loads("[" * 64 + "]" * 64)
    with pytest.raises(BoundedInputError):
        bounded.loads_json("[" * 65 + "]" * 65, "f")


def test_json_syntax_error_stays_a_json_error() -> None:
    with pytest.raises(json.JSONDecodeError):
        bounded.loads_json('{"a": ', "f")


def test_fifo_is_refused_without_opening_it(tmp_path) -> None:
    fifo = tmp_path / "cal.yaml"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    with pytest.raises(BoundedInputError, match="a FIFO"):
        bounded.read_bytes(fifo, what="the calibration file")
    assert time.monotonic() - t0 < 5  # an open() would block forever waiting for a writer


def test_devices_and_directories_are_refused(tmp_path) -> None:
    with pytest.raises(BoundedInputError, match="character device"):
        bounded.read_bytes("/dev/zero")
    with pytest.raises(BoundedInputError, match="a directory"):
        bounded.read_bytes(tmp_path)


def test_size_bound(tmp_path) -> None:
    f = tmp_path / "big.json"
    f.write_bytes(b"[" + b"1," * 600 + b"1]")
    assert len(bounded.read_bytes(f, max_bytes=2_000)) == 1203
    with pytest.raises(BoundedInputError, match="larger than"):
        bounded.read_bytes(f, max_bytes=1_000)


def test_sparse_file_refused_by_size_before_reading(tmp_path) -> None:
    f = tmp_path / "sparse.json"
    with open(f, "wb") as fh:
        fh.truncate(8 << 30)  # 8 GiB of holes: reading it would take 8 GiB
    with pytest.raises(BoundedInputError, match="8,192.0 MiB"):
        bounded.load_json_file(f)


def test_not_utf8_names_line_and_column() -> None:
    with pytest.raises(BoundedInputError, match=r"f:2: byte 0xff at column 3"):
        bounded.decode_utf8(b'{"a":\n  \xff}', "f")
    with pytest.raises(BoundedInputError, match="UTF-16"):
        bounded.decode_utf8("[1]".encode("utf-16"), "f")


def test_line_reader_streams_with_sha_and_bounds_a_line(tmp_path) -> None:
    f = tmp_path / "d.jsonl"
    data = b'{"prompt": "a"}\n\n{"prompt": "b"}\n'
    f.write_bytes(data)
    r = bounded.LineReader(f)
    assert list(r.lines()) == [(1, '{"prompt": "a"}\n'), (2, "\n"), (3, '{"prompt": "b"}\n')]
    assert r.sha256 == hashlib.sha256(data).hexdigest()
    sparse = tmp_path / "sparse.jsonl"
    with open(sparse, "wb") as fh:
        fh.truncate(8 << 30)  # one 8 GiB line of NUL bytes
    with pytest.raises(BoundedInputError, match=r"sparse.jsonl:1: a line longer than 1 MiB"):
        list(bounded.iter_lines(sparse, max_line_bytes=1 << 20))
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"prompt": "a"}\n{"prompt": "\xff\xfe"}\n')
    with pytest.raises(BoundedInputError, match=r"bad.jsonl:2: byte 0xff at column 13"):
        list(bounded.iter_lines(bad))


def _bomb(levels: int = 9, width: int = 9) -> str:
    lines = ["l0: &l0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_yaml_alias_bomb_is_counted_not_expanded() -> None:
    t0 = time.monotonic()
    with pytest.raises(BoundedInputError, match="alias bomb"):
        bounded.safe_load_yaml(_bomb(), "cal.yaml")
    assert time.monotonic() - t0 < 5
    # 9**5 = 59,049 leaves + lists: under the 100,000 bound, and what safe_load gives
    small = _bomb(levels=5)
    assert bounded.safe_load_yaml(small, "cal.yaml") == yaml.safe_load(small)


def test_yaml_deep_nesting_and_recursive_alias() -> None:
    with pytest.raises(BoundedInputError, match="nest more than 64"):
        bounded.safe_load_yaml("a: " + "[" * 100_000 + "]" * 100_000, "cal.yaml")
    with pytest.raises(BoundedInputError, match="nest more than 64"):
        bounded.safe_load_yaml("".join("  " * i + f"k{i}:\n" for i in range(100)) + "  " * 100 + "v: 1\n", "c")
    with pytest.raises(BoundedInputError, match="recursive alias"):
        bounded.safe_load_yaml("a: &a [*a]\n", "cal.yaml")


def test_a_model_config_json_nested_100000_deep_is_a_model_config_error(tmp_path) -> None:
    from pytest_roofline.errors import ModelConfigError
    from pytest_roofline.model.hf_config import _load_config

    (tmp_path / "config.json").write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    with pytest.raises(ModelConfigError, match="nest more than 64 levels"):  # was a RecursionError
        _load_config(tmp_path)
