"""The ``episodes`` command line: its commands, their preflight checks and closing text."""
