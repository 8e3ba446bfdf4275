"""Problems: a question (text, hints, difficulty) with its solution and wrong variants, made
from a template. Everything about a question derives from its text, so equal text means
equal answer; ``pool_problem`` draws a seed's pool of questions, every sixth a second hint
of the previous one (another id, the same answer)."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import lru_cache
from typing import Any

from builder.contract.hashing import question_id
from samples.datasets import DATASETS, Dataset
from samples.steps import EPOCH, Built, Step, iso, load_step
from samples.templates import usable_templates


@dataclass(frozen=True)
class Variant:
    """A plausible wrong final step, shared by traces that make the same mistake."""

    step: Step
    answer: Any
    answer_hash: str


@dataclass(frozen=True)
class Problem:
    dataset: Dataset
    text: str
    hint: str | None
    alt_hint: str
    difficulty: str
    n_steps: int
    steps: tuple[Step, ...]  # steps[0] loads the CSV; steps[-1] computes the answer
    answer: Any
    answer_hash: str
    wrong: tuple[Variant, ...]
    created_at: str | None
    template: str | None = None  # the template's name, as a capture bank's template_name

    @property
    def id(self) -> str:
        return question_id(self.text, self.hint)

    def question(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question_text": self.text,
            "hint": self.hint,
            "difficulty": self.difficulty,
            "n_steps": self.n_steps,
            "created_at": self.created_at,
        }


def make_problem(rng: random.Random, datasets: tuple[Dataset, ...] = DATASETS) -> Problem:
    """A fresh question and its solution, about one of ``datasets``. Parameters come from
    ``rng``; every other detail is seeded by the question text, so equal text always means
    equal answer."""
    ds = rng.choice(datasets)
    usable = usable_templates(ds)
    template = rng.choices([t for t, _ in usable], [w for _, w in usable])[0]
    # Templates draw parameters from rng and details from the second generator: a dry run
    # moves rng past the parameters and yields the text; the real run replays the same
    # parameter draws with details seeded by the text. Texts repeat a lot in big pools.
    state = rng.getstate()
    text = template(ds, rng, random.Random(0))[0]
    key = (ds.file, template.__name__, text)
    problem = _BY_TEXT.get(key)
    if problem is None:
        replay = random.Random()
        replay.setstate(state)
        built = template(ds, replay, random.Random(f"{ds.file}|{text}"))
        meta = random.Random(f"meta|{ds.file}|{text}")
        problem = _problem(ds, built, meta, template.__name__.removeprefix("_t_"))
        if len(_BY_TEXT) >= 16384:
            _BY_TEXT.clear()
        _BY_TEXT[key] = problem
    return problem


_BY_TEXT: dict[tuple[str, str, str], Problem] = {}


def _problem(ds: Dataset, built: Built, r: random.Random, template: str | None) -> Problem:
    text, hint, alt, difficulty, steps, ans, wrong = built
    answer_hash = steps[-1].hash
    variants = tuple(
        Variant(step, answer, step.hash) for step, answer in wrong if step.hash != answer_hash
    )
    created = EPOCH - timedelta(days=r.randint(5, 60), seconds=r.randrange(86400))
    return Problem(
        dataset=ds,
        text=text,
        hint=hint if r.random() < 0.95 else None,
        alt_hint=alt,
        difficulty=difficulty,
        n_steps=len(steps) + 1,  # the load counts as a step
        steps=(load_step(ds), *steps),
        answer=ans,
        answer_hash=answer_hash,
        wrong=variants,
        created_at=iso(created) if r.random() < 0.9 else None,
        template=template,
    )


@lru_cache(maxsize=8192)
def pool_problem(seed: int, index: int) -> Problem:
    """Question ``index`` of the pool of ``seed``. Every sixth one repeats the previous
    question's text with another hint: another question id, the same answer."""
    if index % 6 == 5:
        base = pool_problem(seed, index - 1)
        return replace(base, hint=base.alt_hint)
    return make_problem(random.Random(f"question:{seed}:{index}"))
