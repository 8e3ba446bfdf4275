"""``episodes report``: a build folder (manifest, Parquet, rejects file) → one self-contained
HTML page, and the key charts of the dataset card (``builder.report.card_images``).

Kept light on import: the build imports ``card_images`` only, the command the rest.
"""
