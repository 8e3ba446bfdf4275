"""Ingest: every input file read, validated and normalized into staging tables, by batch."""
