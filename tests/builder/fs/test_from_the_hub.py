"""Which failures are the Hub's (exit 5, 'run it again') and which are the builder's own bugs
(exit 70): decided by the whole chain the client raises."""

from __future__ import annotations

import json

import pytest

from builder.fs.releases import from_the_hub


def raised(outer: type[Exception], inner: Exception) -> Exception:
    try:
        try:
            raise inner
        except Exception as exc:
            raise outer("Error while uploading 'x.parquet' to the Hub.") from exc
    except Exception as wrapped:
        return wrapped


@pytest.mark.parametrize(
    ("error", "hub"),
    [
        (raised(RuntimeError, ConnectionResetError("peer closed")), True),
        (raised(RuntimeError, json.JSONDecodeError("Expecting value", "", 0)), True),
        (raised(RuntimeError, ValueError("malformed answer")), True),
        (OSError("no space left on device"), True),
        (TypeError("create_commit() got an unexpected keyword argument 'x'"), False),
        (raised(RuntimeError, AttributeError("no attribute 'oid'")), False),
    ],
)
def test_the_chain_decides(error: Exception, hub: bool) -> None:
    assert from_the_hub(error) is hub
