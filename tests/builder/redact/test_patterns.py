"""The redaction patterns' shapes: what keeps a search from running to the end of the text."""

from __future__ import annotations

import re

import pytest

from builder.redact import RedactionOptions, redact_strings
from builder.redact.patterns import _PEM_BODY

HEADER = "-----BEGIN PRIVATE KEY-----\n"
KEY = HEADER + "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----"


@pytest.mark.parametrize("text", ["abc\n-----BEGIN", "abc-----", "\\n-----END"])
def test_a_pem_body_never_holds_five_dashes(text: str) -> None:
    """The body stops before the next ``-----``: a header without its end is given up at
    the next header, not searched to the end of the text (a megabyte of repeated headers
    took a minute)."""
    assert re.fullmatch(f"{_PEM_BODY}*", text) is None
    assert re.fullmatch(f"{_PEM_BODY}*", text.split("-----")[0])  # what comes before it


def test_a_pem_body_keeps_the_dashes_of_its_own_headers() -> None:
    encrypted = "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0F1E2D3C\n\nMIIEvQ--==\n"
    assert re.fullmatch(f"{_PEM_BODY}*", encrypted)


def test_repeated_headers_without_an_end_are_each_redacted_and_a_key_after_them_too() -> None:
    text = HEADER * 2000 + "# then\n" + KEY + "\nprint(x)"
    (redacted,), counts = redact_strings([text], RedactionOptions())
    assert redacted == "<REDACTED:private_key>" * 2000 + "# then\n<REDACTED:private_key>\nprint(x)"
    assert counts["private_key"] == 2001
