"""A reference executor for the ``rl`` recipe's ``run``: NOT a security sandbox.

``run(completion, data_dir)`` takes a completion (the messages a trainer generated), runs its
Python — the fenced ```python blocks of its assistant messages, or the ``code`` argument of
its ``run_python`` tool calls — in a fresh interpreter whose working folder is ``data_dir``
(so ``pd.read_csv("housing.csv")`` finds the question's data), with a wall-clock timeout and
limits on memory and CPU time, and returns ``{"answer": submitted}`` when the code called
``submit(value)``, else ``{}``.

The child writes the submitted value as the capture side's ``submit()`` does, in the JSON
forms of both hash schemes (``builder.contract.hashing.submitted_forms``); the parent reads them
back
as a ``builder.contract.hashing.Submitted`` (its ``.value`` is the answer as JSON data), so no
object
is unpickled from generated code and ``outcome_reward`` gives the hash the capture side
recorded for the same live value.

Resource limits stop runaway code, not hostile code: generated code can still read and write
files, open sockets and spawn processes as your user. Run training rollouts in a container or
VM you are prepared to lose.

    from functools import partial
    from builder.contract.rewards import make_outcome_reward
    reward = make_outcome_reward(partial(run, data_dir="data/csv"))
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from builder.contract.hashing import Submitted

FENCED = re.compile(r"```python\n(.*?)```", re.S)

# Runs in the child: defines submit(), executes the code, writes the submitted forms.
# ``submit`` takes the capture side's evidence keywords (``key_lines=...``) and ignores them;
# like the capture side's, it raises when the answer cannot be written as JSON.
HARNESS = """
import json
import sys
from builder.contract.hashing import submitted_forms

_out = sys.argv[1]


def submit(value, **evidence):
    forms = submitted_forms(value)
    if not any(forms.values()):
        raise TypeError(f"submit(): {type(value).__name__} cannot be written as JSON")
    with open(_out, "w") as f:
        json.dump(forms, f)


exec(compile(sys.stdin.read(), "<completion>", "exec"), {"submit": submit, "__name__": "__main__"})
"""


def code_of(completion: Any) -> str:
    """The Python a completion asks to run, in order."""
    messages = (
        completion
        if isinstance(completion, list)
        else [{"role": "assistant", "content": str(completion)}]
    )
    cells: list[str] = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        cells += FENCED.findall(message.get("content") or "")
        for call in message.get("tool_calls") or []:
            code = _call_code(call)
            if code is not None:
                cells.append(code)
    return "\n".join(cells)


def _call_code(call: Any) -> str | None:
    """A tool call's ``code``: its arguments as the stored configs write them (a JSON
    string) or as trainers parse a generated call (TRL's ``parse_response`` gives a dict)."""
    try:
        arguments = call["function"]["arguments"]
        if isinstance(arguments, str | bytes):
            arguments = json.loads(arguments)
        code = arguments["code"]
    except (KeyError, TypeError, ValueError):
        return None
    return code if isinstance(code, str) else None


def _limits(memory_mb: int, cpu_seconds: int) -> Any:
    def apply() -> None:
        memory = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))

    return apply


def run(
    completion: Any,
    data_dir: str | Path = ".",
    timeout: float = 10.0,
    memory_mb: int = 2048,
) -> dict[str, Any]:
    """``{"answer": Submitted}`` when the completion's code submitted a value within the
    limits, else ``{}`` (no code, an error, a timeout or a limit hit all score as not submitted)."""
    code = code_of(completion)
    if not code.strip():
        return {}
    with tempfile.TemporaryDirectory() as scratch:
        answer = Path(scratch) / "answer.json"
        root = str(Path(__file__).resolve().parents[1])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
        }
        try:
            subprocess.run(
                [sys.executable, "-c", HARNESS, str(answer)],
                input=code,
                cwd=str(data_dir),
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
                preexec_fn=_limits(memory_mb, int(timeout) + 1),
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {}
        if not answer.exists():
            return {}
        try:
            forms = json.loads(answer.read_text())
        except ValueError:  # killed while writing it: nothing was submitted
            return {}
        return {"answer": Submitted({scheme: tuple(texts) for scheme, texts in forms.items()})}
