"""The fast typed decode of an input line, derived from the pydantic models at import.

pydantic (``schemas.episode``) is the one definition of an episode and the source of every
reject message. Validating a 56 KB line with it costs several JSON parses, so the common
line takes this path instead: ``msgspec`` Structs generated from the models' ``model_fields``
— same field names, defaults, strictness, patterns and bounds — are converted from the
line's JSON value, which orjson parses once for every check of the line
(``builder.validate.json_lines.LineJSON``); a line orjson refuses is decoded from its
bytes. Nothing here is a second schema written by hand: a field type or a
constraint the derivation does not understand raises at import, so the models cannot drift
away from it silently.

The fast path only ever *accepts* a line that pydantic would accept with the same values;
anything else goes to pydantic (the slow path), which accepts it or produces the exact
reject. To stay on the safe side it declines, rather than decides:

* unknown fields (``forbid_unknown_fields``): pydantic keeps them as extras, the fast
  Structs cannot, so such lines are validated by pydantic and their extras stored;
* datetimes are decoded as strings and parsed by pydantic's own datetime validator;
* a run of 19+ digits (an integer orjson would read as a float; see ``builder.validate``);
* lines that are too long, or any decode error at all.

Any-typed fields default to ``UNSET`` so "absent" and ``null`` stay different, as pydantic's
``model_fields_set`` tells them apart. ``tests/builder/test_fastpath.py`` checks, on
generated and mutated lines, that fast and slow paths agree.
"""

from __future__ import annotations

import datetime as dt
import types
import typing
from typing import Annotated, Any, ClassVar, Literal, Union

import annotated_types
import msgspec
from pydantic import BaseModel, Strict, StringConstraints, TypeAdapter
from pydantic_core import PydanticUndefined

from builder.validate.json_lines import REFUSED, LineJSON, read_json
from schemas.episode import Episode, Question

UNSET = msgspec.UNSET


class FastRecord(msgspec.Struct, forbid_unknown_fields=True):
    """Base of the derived Structs; mirrors what the normalizer reads of a pydantic model."""

    model_extra: ClassVar[None] = None  # lines with unknown fields never take the fast path

    @property
    def model_fields_set(self) -> set[str]:
        """Fields present in the input, as far as the normalizer asks: an Any-typed field
        (default ``UNSET``) is in the set only when the line carried it."""
        return {f for f in self.__struct_fields__ if getattr(self, f) is not UNSET}


class DerivationError(TypeError):
    """A model field the derivation cannot mirror exactly."""


def _pattern(pattern: str) -> str:
    # pydantic matches with Rust regex, where ``$`` is the end of the text; Python's ``re``
    # (msgspec) would also match before a final newline. ``\Z`` is Rust's ``$``.
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        return pattern[:-1] + r"\Z"
    return pattern


_BOUNDS = {
    annotated_types.Ge: "ge",
    annotated_types.Gt: "gt",
    annotated_types.Le: "le",
    annotated_types.Lt: "lt",
    annotated_types.MinLen: "min_length",
    annotated_types.MaxLen: "max_length",
}


def _constraints(meta: list[Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in meta:
        if isinstance(m, Strict):
            if not m.strict:
                raise DerivationError(f"{where}: non-strict marker")
        elif isinstance(m, StringConstraints):
            if any(
                getattr(m, k) is not None
                for k in ("strip_whitespace", "to_upper", "to_lower", "ascii_only")
            ):
                raise DerivationError(f"{where}: transforming string constraint")
            if m.strict is not True:
                raise DerivationError(f"{where}: lax string constraint")
            if m.pattern is not None:
                out["pattern"] = _pattern(str(m.pattern))
            if m.min_length is not None:
                out["min_length"] = m.min_length
            if m.max_length is not None:
                out["max_length"] = m.max_length
        elif type(m) in _BOUNDS:  # the msgspec keyword is the attribute's name
            out[_BOUNDS[type(m)]] = getattr(m, _BOUNDS[type(m)])
        else:
            raise DerivationError(f"{where}: unsupported constraint {m!r}")
    return out


class _Deriver:
    def __init__(self) -> None:
        self.structs: dict[type[BaseModel], type[FastRecord]] = {}
        # per Struct: datetime fields (parsed after decoding) and nested fields to visit
        self.datetimes: dict[type[FastRecord], list[tuple[str, TypeAdapter[Any]]]] = {}
        self.nested: dict[type[FastRecord], list[str]] = {}

    def struct(self, model: type[BaseModel]) -> type[FastRecord]:
        if model in self.structs:
            return self.structs[model]
        if model.model_config.get("extra") != "allow":
            raise DerivationError(f"{model.__name__}: only extra='allow' models are derived")
        fields: list[tuple[Any, ...]] = []
        datetimes: list[tuple[str, TypeAdapter[Any]]] = []
        nested: list[str] = []
        for name, info in model.model_fields.items():
            where = f"{model.__name__}.{name}"
            if info.alias not in (None, name) or info.validation_alias is not None:
                raise DerivationError(f"{where}: aliases are not derived")
            tp = self.type(info.annotation, where)
            if info.metadata:
                tp = _constrain(tp, _constraints(info.metadata, where))
            if info.annotation is Any:
                fields.append((name, Any, UNSET))  # absent and null differ
            elif info.default_factory is not None:
                fields.append((name, tp, msgspec.field(default_factory=info.default_factory)))
            elif info.default is PydanticUndefined:
                fields.append((name, tp))
            else:
                if info.default is not None and not isinstance(info.default, int | str | bool):
                    raise DerivationError(f"{where}: mutable default")
                fields.append((name, tp, info.default))
            if _mentions(info.annotation, dt.datetime):
                datetimes.append((name, TypeAdapter(info.annotation)))
            if _mentions_model(info.annotation, self._needs_visit):
                nested.append(name)
        # required fields first (a msgspec rule); decoding is by name, so order is free
        fields.sort(key=lambda f: len(f) == 3)
        cls = msgspec.defstruct(
            f"Fast{model.__name__}", fields, bases=(FastRecord,), forbid_unknown_fields=True
        )
        self.structs[model] = cls
        self.datetimes[cls] = datetimes
        self.nested[cls] = nested
        return cls

    def _needs_visit(self, model: type[BaseModel]) -> bool:
        cls = self.struct(model)
        return bool(self.datetimes[cls] or self.nested[cls])

    def type(self, tp: Any, where: str) -> Any:
        origin = typing.get_origin(tp)
        if tp is Any:
            return Any
        if tp in (str, int, bool, float, type(None)):
            return tp
        if tp is dt.datetime:
            return str  # parsed by pydantic's own validator after decoding
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return self.struct(tp)
        if origin is Annotated:
            base, *meta = typing.get_args(tp)
            if base is dt.datetime:
                return str  # validators included, pydantic's adapter runs after decoding
            inner = self.type(base, where)
            constraints = _constraints(meta, where)
            return Annotated[inner, msgspec.Meta(**constraints)] if constraints else inner
        if origin in (Union, types.UnionType):
            args = tuple(self.type(a, where) for a in typing.get_args(tp))
            return Union[args]  # noqa: UP007 - built from a tuple
        if origin is Literal:
            return tp
        if origin is list:
            (item,) = typing.get_args(tp)
            return list[self.type(item, where)]  # type: ignore[misc]
        if origin is dict:
            key, value = typing.get_args(tp)
            if key is not str:
                raise DerivationError(f"{where}: dict keys must be str")
            return dict[str, self.type(value, where)]  # type: ignore[misc]
        raise DerivationError(f"{where}: unsupported type {tp!r}")


def _constrain(tp: Any, constraints: dict[str, Any]) -> Any:
    """Field-level constraints; on ``X | None`` pydantic applies them to ``X``."""
    if not constraints:
        return tp
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = tuple(
            a if a is type(None) else _constrain(a, constraints) for a in typing.get_args(tp)
        )
        return Union[args]  # noqa: UP007
    return Annotated[tp, msgspec.Meta(**constraints)]


def _mentions(tp: Any, target: Any) -> bool:
    return tp is target or any(_mentions(a, target) for a in typing.get_args(tp))


def _mentions_model(tp: Any, pred: Any) -> bool:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return pred(tp)
    return any(_mentions_model(a, pred) for a in typing.get_args(tp))


_DERIVED = _Deriver()
FastEpisode = _DERIVED.struct(Episode)
FastQuestion = _DERIVED.struct(Question)
_STRUCTS: dict[type[BaseModel], type[FastRecord]] = {Episode: FastEpisode, Question: FastQuestion}
_DECODERS: dict[type[BaseModel], msgspec.json.Decoder[Any]] = {
    Episode: msgspec.json.Decoder(FastEpisode),
    Question: msgspec.json.Decoder(FastQuestion),
}


class _Decline(Exception):
    pass


def _finish(record: Any) -> None:
    """Parse datetime strings with pydantic; recurse where nested models hold datetimes."""
    cls = type(record)
    for name, adapter in _DERIVED.datetimes[cls]:
        value = getattr(record, name)
        if value is not None:
            try:
                setattr(record, name, adapter.validate_python(value))
            except Exception as exc:  # the slow path names the error
                raise _Decline from exc
    for name in _DERIVED.nested[cls]:
        value = getattr(record, name)
        if isinstance(value, list):
            for item in value:
                _finish(item)
        elif value is not None:
            _finish(value)


def decode(model: type[BaseModel], raw: bytes | LineJSON) -> Any | None:
    """The line as a derived Struct, or ``None`` when the slow path must decide."""
    decoder = _DECODERS.get(model)
    if decoder is None:
        return None
    line = read_json(raw)
    if line.long_run:
        return None
    value = line.orjson_value()
    try:
        if value is REFUSED:  # NaN, a lone surrogate, no JSON: msgspec says which
            record = decoder.decode(line.raw)
        else:  # typed from the value the line's other checks share: no second parse
            record = msgspec.convert(value, _STRUCTS[model])
        _finish(record)
    except (msgspec.DecodeError, RecursionError, _Decline, ValueError):
        return None
    return record
