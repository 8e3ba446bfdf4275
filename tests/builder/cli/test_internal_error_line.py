"""An internal error is one line: the first of its message, the rest left to ``--debug``."""

from __future__ import annotations

import pytest

from builder import errors as exit_codes
from builder.cli import episodes


def test_an_internal_error_with_a_message_of_many_lines_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    def broken(args: object) -> int:
        raise OverflowError("cannot fit 'int' into an index-sized integer\n\nplan:\n  SELECT …\n")

    monkeypatch.setitem(episodes.COMMANDS, "doctor", broken)
    code = episodes.main(["doctor", "build/dataset"])
    err = capfd.readouterr().err
    assert code == exit_codes.INTERNAL
    assert err.count("\n") == 1 and "index-sized integer — this is a bug" in err, err
