"""What can be wrong with the build folder a report reads: one line naming what is missing."""

from __future__ import annotations

from builder.errors import EnvironmentProblem, UsageError


class BuildFolderError(UsageError):
    """The folder is not a complete build of this builder (exit 1, like unreadable input)."""

    hint = "run `episodes build` again into that folder, or name another one"


class AgainstError(UsageError):
    """``--against`` names neither a build folder nor a build's manifest."""

    hint = "name another build's folder, or its manifest.json"


class TokenizerError(UsageError):
    """``--tokenizer`` names no tokenizer this report can load."""

    hint = "name a tokenizer.json, or a folder a tokenizer was saved to (save_pretrained)"


class RejectsFileError(UsageError):
    """The rejects file is missing or is not the one of this build."""

    hint = "pass the build's rejects file with --rejects FILE"


class ReportOutputError(EnvironmentProblem):
    """The report cannot be written where asked (exit 5, like an unwritable build output)."""

    hint = "choose another --out"


class OutputInBuildError(UsageError):
    """``--out`` inside the build folder: a file the manifest does not list (``publish``
    refuses such a folder), and gone at the next build."""

    hint = "write it beside the build folder (the default)"
