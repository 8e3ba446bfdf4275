"""Columnar dataset builder: agent episodes and sessions → Arrow tables → HF dataset."""

import sys

from builder.contract import hashing as _hashing

__version__ = "0.1.0"

# The hash rules moved to ``builder.contract.hashing``; the sample generators (``samples/``)
# still import them as ``builder.hashing``. Remove this alias once they import the new name.
sys.modules.setdefault("builder.hashing", _hashing)
