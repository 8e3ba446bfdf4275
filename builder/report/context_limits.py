"""The context lengths rows are compared with (the report's tables, the card's chart)."""

CONTEXT_LIMITS = (4096, 8192, 32768)
CHARS_PER_TOKEN = 4  # the usual rough estimate for English and code
