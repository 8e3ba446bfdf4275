"""Sources: input files and globs read as lines, JSON documents, question banks."""
