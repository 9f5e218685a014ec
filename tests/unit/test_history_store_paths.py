"""Where a directory store may be created: inside a folder that exists, as a sqlite file is (a mistyped path is
an error, not a new empty store whose first night compares nothing and passes under --roofline-drift-fail)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_roofline.history import DirectoryStore, HistoryError, open_store


def test_a_new_store_is_made_inside_a_folder_that_exists(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "hist"))
    assert (tmp_path / "hist").is_dir() and store.runs() == []


def test_a_store_whose_folder_does_not_exist_is_refused_and_nothing_is_made(tmp_path: Path) -> None:
    typo = tmp_path / "typo" / "hsit"
    with pytest.raises(HistoryError, match=r"its folder .*typo does not exist; check the path, or create the folder"):
        DirectoryStore(typo)
    assert not (tmp_path / "typo").exists()


def test_an_existing_store_opens_whatever_its_parents(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "hist"
    deep.mkdir(parents=True)
    assert DirectoryStore(deep).runs() == []
