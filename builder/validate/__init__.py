"""Validate stage: one input line becomes a model instance, a blank, or a reject."""
