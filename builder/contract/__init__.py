"""The capture contract: the hash rules producers follow, answer matching, reward functions,
stored hook values."""
