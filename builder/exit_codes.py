"""Exit codes of every ``episodes`` subcommand: one table, documented in the README."""

OK = 0
USAGE = 1  # bad flags, bad config, unreadable input
REFUSED = 2  # input rejected over the threshold; validate found rejects; publish refused
STRICT_CHECKS = 3  # build refused because integrity checks failed under --strict
LOCKED = 4  # another build holds the output folder's lock
UNAVAILABLE = 5  # the Hub or object store could not be reached, or a publish or upload was
# interrupted: rerun it
INTERRUPTED = 130  # Ctrl-C (SIGINT)
TERMINATED = 143  # SIGTERM
INTERNAL = 70  # a bug in the builder (EX_SOFTWARE): rerun with --debug and report it
