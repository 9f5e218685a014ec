"""Runs over time: a store of past runs (a directory by default, a database by URI), drift and comparison."""
