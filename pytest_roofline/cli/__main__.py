"""``python -m pytest_roofline.cli ARGS``: the ``roofline`` command (scripts/nightly.sh and the tests run it so)."""

from pytest_roofline.cli.parser import main

raise SystemExit(main())
