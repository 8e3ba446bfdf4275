"""Columnar dataset builder: agent episodes and sessions → Arrow tables → HF dataset."""

__version__ = "0.1.0"
