"""Reading untrusted JSON into a record and its parts: every value checked against its type,
and a value of the wrong type named by its field (``stages.p50_ms``), as is a key a part must
have that it lacks (``accelerator.api``)."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

T = typing.TypeVar("T")

#: Where a part read by ``read_fields`` keeps the keys it was stored with, in their order.
_STORED_KEYS = "_stored_keys"


def json_kind(value: Any) -> str:
    """What a parsed JSON value is, in JSON's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return _JSON_KINDS.get(type(value), type(value).__name__)


#: JSON's names for the container and string types ``json.loads`` returns.
_JSON_KINDS: dict[type, str] = {str: "string", list: "array", dict: "object"}


def matches(value: Any, hint: Any) -> bool:
    """Whether a value read from JSON fits an annotation (containers one level deep: a list of
    numbers holds numbers, a dict of numbers holds numbers or null)."""
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return any(matches(value, arg) for arg in typing.get_args(hint))
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if hint is bool:
        return isinstance(value, bool)
    if origin is list:
        (item,) = typing.get_args(hint)
        if not isinstance(value, list):
            return False
        exact = _EXACT_TYPES.get(item)
        if exact is not None and all(type(v) in exact for v in value):
            return True  # the common case (samples, traces) without a call per item
        return all(matches(v, item) for v in value)
    if origin is dict:
        item = typing.get_args(hint)[1]
        if not isinstance(value, dict):
            return False
        exact = _EXACT_TYPES.get(item)
        if exact is not None and all(v is None or type(v) in exact for v in value.values()):
            return True
        return all(v is None or matches(v, item) for v in value.values())
    return isinstance(value, hint)


#: The JSON types a scalar annotation accepts as they come from ``json.loads`` (exact types:
#: a bool is no number); anything else is checked by ``matches`` itself.
_EXACT_TYPES: dict[Any, tuple[type, ...]] = {float: (int, float), int: (int,), str: (str,)}


def wrong_type(name: str, value: Any) -> ValueError:
    return ValueError(f"field {name} holds a JSON {json_kind(value)}")


class JsonObject:
    """One JSON object of a record part, read key by key: ``get`` returns a key's value when
    it fits the type asked for, None when the key is absent or null, and raises a ValueError
    naming ``<field>.<key>`` otherwise. Keys nobody asks for (a newer writer's) are dropped."""

    def __init__(self, data: Any, name: str) -> None:
        if not isinstance(data, dict):
            raise wrong_type(name, data)
        self.data = data
        self.name = name

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def get(self, key: str, hint: Any) -> Any:
        value = self.data.get(key)
        if value is None:
            return None
        if not matches(value, hint):
            raise wrong_type(f"{self.name}.{key}", value)
        return value

    def child(self, key: str) -> JsonObject | None:
        """A nested object, or None when the key is absent or null."""
        value = self.data.get(key)
        return None if value is None else JsonObject(value, f"{self.name}.{key}")

    def objects(self, key: str) -> list[JsonObject]:
        """A list of objects (absent or null: none)."""
        values = self.get(key, list[Any]) or []
        return [JsonObject(v, f"{self.name}.{key}[{i}]") for i, v in enumerate(values)]


def read_fields(
    cls: type[T],
    data: Any,
    name: str,
    readers: Mapping[str, Callable[[JsonObject, str], Any]] | None = None,
) -> T:
    """A dataclass whose field names are its JSON keys, read key by key: each value checked
    against its field's type (a wrong one is a ValueError naming ``<name>.<key>``), a list of
    dataclasses read object by object the same way, an absent key left to the field's default
    (None without one); ``readers`` read the keys stored in another shape. The keys it was
    stored with are kept on the object, so ``write_fields`` writes the same keys in the same
    order."""
    obj = JsonObject(data, name)
    hints = _field_hints(cls)
    readers = readers or {}
    values: dict[str, Any] = {}
    for key, hint in hints.items():
        if key not in obj.data:
            continue
        item = _listed_dataclass(hint)
        if key in readers:
            values[key] = readers[key](obj, key)
        elif item is not None and obj.has(key):
            values[key] = [read_fields(item, o.data, o.name) for o in obj.objects(key)]
        else:
            values[key] = obj.get(key, hint)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]  # cls is a dataclass type
        if f.name not in values and _no_default(f):
            values[f.name] = None
    part = cls(**values)
    object.__setattr__(part, _STORED_KEYS, tuple(key for key in obj.data if key in hints))
    return part


def write_fields(
    part: Any, writers: Mapping[str, Callable[[Any], Any]] | None = None
) -> dict[str, Any]:
    """A dataclass as its JSON object: the keys it was read with, in their order, then any
    other field set since (no longer its default); a part built in code writes every field.
    A list of dataclasses is written object by object; ``writers`` write the keys stored in
    another shape."""
    stored: tuple[str, ...] | None = getattr(part, _STORED_KEYS, None)
    fields = dataclasses.fields(part)
    if stored is None:
        keys = [f.name for f in fields]
    else:
        changed = (f.name for f in fields if not _is_default(getattr(part, f.name), f))
        keys = [*stored, *(name for name in changed if name not in stored)]
    writers = writers or {}
    data = {}
    for key in keys:
        value = getattr(part, key)
        if key in writers:
            value = writers[key](value)
        elif isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
            value = [write_fields(v) for v in value]
        data[key] = value
    return data


def _listed_dataclass(hint: Any) -> type | None:
    """``D`` for a field of type ``list[D]`` (or ``list[D] | None``) where D is a dataclass."""
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        found = [_listed_dataclass(arg) for arg in typing.get_args(hint)]
        return next((item for item in found if item is not None), None)
    if typing.get_origin(hint) is list:
        (item,) = typing.get_args(hint)
        return item if isinstance(item, type) and dataclasses.is_dataclass(item) else None
    return None


#: Each dataclass's field types, resolved once (``typing.get_type_hints`` is slow).
_FIELD_HINTS: dict[type, dict[str, Any]] = {}


def _field_hints(cls: type) -> dict[str, Any]:
    found = _FIELD_HINTS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = _FIELD_HINTS[cls] = {f.name: hints[f.name] for f in dataclasses.fields(cls)}
    return found


def _no_default(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def _is_default(value: Any, f: dataclasses.Field[Any]) -> bool:
    """Whether a field holds what it got when its key was absent: its default (the same
    object, for a NaN default), or None without one."""
    if f.default_factory is not dataclasses.MISSING:
        return bool(value == f.default_factory())
    default = None if f.default is dataclasses.MISSING else f.default
    return value is default or bool(value == default)


class RecordPart:
    """A typed part of a record, stored as one JSON object under its field name.

    Subclasses are dataclasses. ``from_dict`` reads the stored object (validating, through
    ``JsonObject``) and ``to_dict`` writes it back, key for key as earlier versions wrote it:
    by default each field is the key of its name (``read_fields``/``write_fields``); a part
    stored in another shape overrides both. ``merge`` gives the part of a record pooled from a
    cell's interleaved rounds: the first round's, unless the part pools its rounds."""

    @classmethod
    def from_dict(cls, data: Any, name: str) -> typing.Self:
        return read_fields(cls, data, name)

    def to_dict(self) -> dict[str, Any]:
        return write_fields(self)

    @classmethod
    def merge(cls, rounds: typing.Sequence[typing.Self | None]) -> typing.Self | None:
        return rounds[0] if rounds else None


def without_none(pairs: dict[str, Any]) -> dict[str, Any]:
    """The keys whose value is set: for parts whose writers leave unset keys out."""
    return {k: v for k, v in pairs.items() if v is not None}


def read_part(part: type[T], data: Any, name: str) -> T:
    """A record part from its stored object: a ``RecordPart`` by its own ``from_dict``, a
    plain dataclass defined below results (quantization's ``Accuracy``) by its fields; then
    checked for the keys it must have (``check_keys``), whichever reader read it."""
    if issubclass(part, RecordPart):
        value: T = part.from_dict(data, name)
    else:
        value = read_fields(part, data, name)
    check_keys(value, data, name)
    return value


def check_keys(part: Any, data: Any, name: str) -> None:
    """Every field of ``part`` (a dataclass read from the JSON object ``data``) whose type
    admits no None holds a value, or the part is a ValueError naming ``<name>.<key>``: a part
    without a key it must have (``"accelerator": {}`` has no ``api``) is no part. A null where
    the field has a default reads as the default, and a float stored as null (a NaN, which
    JSON cannot hold) as NaN. Dataclasses inside it (an object, a list of objects) are
    checked the same way."""
    stored = data if isinstance(data, dict) else {}
    for f in dataclasses.fields(part):
        hint = _field_hints(type(part))[f.name]
        value = getattr(part, f.name)
        if value is None and not matches(None, hint):
            if hint is float and f.name in stored:
                value = math.nan
            elif _no_default(f):
                raise ValueError(f"field {name}.{f.name} is missing")
            else:
                value = _default(f)
            setattr(part, f.name, value)
        elif dataclasses.is_dataclass(value):
            check_keys(value, stored.get(f.name), f"{name}.{f.name}")
        elif isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
            items = stored.get(f.name)
            items = items if isinstance(items, list) and len(items) == len(value) else []
            for i, item in enumerate(value):
                check_keys(item, items[i] if items else None, f"{name}.{f.name}[{i}]")


def part_to_json(part: Any) -> dict[str, Any]:
    return part.to_dict() if isinstance(part, RecordPart) else write_fields(part)


def merge_part(part: type[T], rounds: typing.Sequence[T | None]) -> T | None:
    """The part of a record pooled from rounds: the part's own merge, or the first round's."""
    if issubclass(part, RecordPart):
        return part.merge(rounds)  # type: ignore[arg-type]  # rounds are parts of the type merge takes
    return rounds[0] if rounds else None
