"""The ``roofline`` command.

``roofline predict``      the analytical decode table for a chip, a model, a context and batch sizes;
                          ``--simulate [FILE.yaml]``: the serving model's predicted sweep (``--results`` beside it)
``roofline quantities``   every quantity a prediction can name, with its dimension and at-parameters
``roofline hardware``     the hardware catalog
``roofline schema``       the JSON Schema of the prediction format (for a YAML language server)
``roofline check FILE``   validate prediction files without running pytest
``roofline report``       render a standalone HTML scorecard from a predictions file and a results file
``roofline history URI``  render the trend page of a history store (each prediction night by night)
``roofline compare A B``  two runs side by side (run ids in a store, run directories, results.json files)
``roofline tiny-model``   make the project's tiny CPU test model (offline, deterministic)
``roofline calibrate``    fit the serving model's constants to measured points, write a calibration file

The package, by concept (``python -m pytest_roofline.cli`` runs :mod:`~pytest_roofline.cli.__main__`):

- :mod:`~pytest_roofline.cli.parser`       ``make_parser()`` (every command and flag) and ``main()`` (run, errors)
- :mod:`~pytest_roofline.cli.setup_flags`  ``--tp``/``--set``/... -> the setup sections a prediction file writes
- :mod:`~pytest_roofline.cli.predict`      ``roofline predict``: the decode table, the KV pool, ``--simulate``
- :mod:`~pytest_roofline.cli.commands`     the other commands
- :mod:`~pytest_roofline.cli.jsonout`      what every ``--json`` writes: strict JSON, ``null`` for a non-finite number
"""

from __future__ import annotations

from pytest_roofline.cli.parser import main, make_parser
from pytest_roofline.cli.predict import kv_pool, predict_rows
from pytest_roofline.cli.setup_flags import set_item, setup_tree

#: the names the tests have used since the CLI was one module
_set_item = set_item
_setup_tree = setup_tree

__all__ = ["main", "make_parser", "predict_rows", "kv_pool"]
