"""Shared test support: fakes, fixtures' building blocks and canonical inputs (see tests/README.md).

Test modules import from here (``from support.fake_vllm import ...``), never from one another.
"""
