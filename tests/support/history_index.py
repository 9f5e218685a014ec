"""Writing a history store's index line as an older version of the plugin wrote it: one stored-value column
dropped (a store kept before that column existed), for the tests that read such a store back."""

from __future__ import annotations

import json
from pathlib import Path


def drop_index_column(store_dir: Path, column: str) -> None:
    """Rewrite ``store_dir``'s one-line ``index.jsonl`` without the stored values' ``column``."""
    index = store_dir / "index.jsonl"
    line = json.loads(index.read_text())
    i = line["values"]["fields"].index(column)
    del line["values"]["fields"][i]
    for row in line["values"]["rows"]:
        del row[i]
    index.write_text(json.dumps(line) + "\n")
