"""Files and folders: local and object-store storage, Parquet settings, the output folder
(its lock, the atomic swap, recovery)."""
