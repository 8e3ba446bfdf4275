"""Publish stage: a build folder to the Hugging Face Hub as an immutable, tagged release.

``release`` runs the flow (gate, read the repository, version, stage, plan, commit, tag);
``cli`` is the ``episodes publish`` command. Kept empty on import: the command line builds
every subcommand's options, ``publish``'s among them, before it runs any (a build among
them), so importing the package must not import the Hub client nor the report.
"""
