"""Every name the stages and the readers of a build share, defined once: split names, the
split group policies, and the reasons a question is held out of the training configs."""

from __future__ import annotations

SPLITS = ("train", "validation", "test")
HELD_OUT = SPLITS[1:]
