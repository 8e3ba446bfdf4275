"""One family for every error a user can cause: each kind carries its exit code and a hint.

The ``episodes`` command catches :class:`UserError` once, at the top, and prints one line
``episodes <command>: <what went wrong> — <what to do>``; ``--debug`` (or ``EPISODES_DEBUG=1``)
adds the traceback. The numbers are the table below.
"""

from __future__ import annotations

# Exit codes of every ``episodes`` subcommand: one table, documented in the README.
OK = 0
USAGE = 1  # bad flags, bad config, unreadable input
REFUSED = 2  # input rejected over the threshold; validate found rejects; publish refused
STRICT_CHECKS = 3  # build refused because integrity checks failed under --strict
LOCKED = 4  # another build holds the output folder's lock
UNAVAILABLE = 5  # the Hub or object store could not be reached, or a publish or upload was
# interrupted: rerun it
INTERRUPTED = 130  # Ctrl-C (SIGINT)
READER_GONE = 141  # the output's reader closed it (``episodes … | head``), as for SIGPIPE
TERMINATED = 143  # SIGTERM
INTERNAL = 70  # a bug in the builder (EX_SOFTWARE): rerun with --debug and report it


class UserError(Exception):
    """An error the user can fix; ``hint`` says how (empty when the message already does)."""

    exit_code: int = USAGE
    hint: str = ""


class UsageError(UserError):
    """Bad flags, bad config, unreadable or missing input."""

    exit_code = USAGE
    hint = "check the command line and dataset.toml"


class ConfigError(UsageError, ValueError):
    """A config file or flag combination that cannot be used."""


class DataRefused(UserError):
    """The data refused the build or the release (rejects over the threshold, a gate)."""

    exit_code = REFUSED


class EnvironmentProblem(UserError):
    """A missing extra, an unreachable database or service, an unwritable output."""

    exit_code = UNAVAILABLE
    hint = "fix the environment and run the same command again"


class MissingExtra(EnvironmentProblem):
    """An option that needs an optional part that is not installed."""

    def __init__(self, what: str, module: str, extra: str) -> None:
        super().__init__(f"{what} needs the Python module {module!r}, which is not installed")
        self.hint = f"pip install 'agent-traces[{extra}]'"


def require(module: str, what: str, extra: str) -> None:
    """Raise :class:`MissingExtra` unless ``module`` can be imported (checked before any work)."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingExtra(what, module, extra)


class LockHeld(UserError):
    """Another build holds the output folder's lock."""

    exit_code = LOCKED
    hint = "wait for the other build to finish"


def one_line(command: str, exc: BaseException) -> str:
    """The single stderr line for ``exc`` (newlines in the message folded to '; ')."""
    text = "; ".join(part for part in str(exc).splitlines() if part.strip()) or type(exc).__name__
    hint = getattr(exc, "hint", "")
    return f"episodes {command}: {text}" + (f" — {hint}" if hint else "")


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message: a library's error may add pages (a query plan)
    that the one line of an internal error leaves to ``--debug``'s traceback."""
    return next((part for part in str(exc).splitlines() if part.strip()), type(exc).__name__)
