"""Reporting: the terminal table, pytest-html columns and extras, and the standalone HTML scorecard."""
