"""An episode's unknown fields, keyed by JSON path (``episodes.extra_fields``), and the
generic paths the manifest counts them by.

A key is a step ``.name`` when it is a plain name, else ``["…"]``, the key as a JSON string
(``schemas.lines.path_key``, whose ``path_steps`` reads a path back): a top-level key
``"a.b[0]"`` is ``$["a.b[0]"]``, never ``$.a.b[0]``, the path of ``{"a": {"b": [...]}}``.
"""

from __future__ import annotations

from functools import cache
from typing import Any, get_args

from pydantic import BaseModel

from schemas.lines import path_key, path_steps


def extra_fields(model: BaseModel, path: str = "$") -> list[tuple[str, Any]]:
    """Unknown input fields anywhere in the tree, keyed by JSON path, depth first."""
    found: list[tuple[str, Any]] = []
    _extras(model, (None, path), found)
    return found


# A JSON path as (parent, step): a model's path is spelled only when it has unknown fields,
# where every nested model (≈ 50 an episode, hooks and turns) spelled its own, and passed
# each extra up through a generator per level: most of what an episode with extras cost.
_Path = tuple[Any, str]


def _spelled(path: _Path) -> str:
    steps = []
    node: Any = path
    while node is not None:
        node, step = node
        steps.append(step)
    return "".join(reversed(steps))


def _extras(model: BaseModel, path: _Path, found: list[tuple[str, Any]]) -> None:
    extra = model.__pydantic_extra__
    if extra:
        where = _spelled(path)
        found += [(where + path_key(key), value) for key, value in extra.items()]
    for name in _nested_fields(type(model)):
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            _extras(value, (path, f".{name}"), found)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    _extras(item, (path, f".{name}[{i}]"), found)


@cache
def _nested_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields of ``model`` whose type names a model: the only ones that can hold one
    (a validated value is of its field's type; an Any-typed one is plain JSON)."""
    return tuple(name for name, info in model.model_fields.items() if _names_model(info.annotation))


def _names_model(tp: Any) -> bool:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return True
    return any(_names_model(arg) for arg in get_args(tp))


def generic_path(path: str) -> str:
    """``$.consistency_traces[2].foo`` -> ``$.consistency_traces[*].foo`` for counting; a
    key in brackets (``$["a.b[0]"]``) stays as it is."""
    if '["' in path:  # a key spelled as a JSON string: its brackets are no index
        return "$" + "".join("[*]" if type(s) is int else path_key(s) for s in path_steps(path))
    out, depth = [], 0
    for ch in path:
        if ch == "[":
            depth += 1
            out.append("[*]")
        elif ch == "]":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)
