"""Reading untrusted JSON into a record and its parts: every value checked against its type,
and a value of the wrong type named by its field (``stages.p50_ms``)."""

from __future__ import annotations

import types
import typing
from typing import Any


def json_kind(value: Any) -> str:
    """What a parsed JSON value is, in JSON's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), type(value).__name__)


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
        return isinstance(value, list) and all(matches(v, item) for v in value)
    if origin is dict:
        item = typing.get_args(hint)[1]
        return isinstance(value, dict) and all(
            v is None or matches(v, item) for v in value.values()
        )
    return isinstance(value, hint)


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


class RecordPart:
    """A typed part of a record, stored as one JSON object under its field name.

    Subclasses are dataclasses with ``from_dict`` (validating, through ``JsonObject``) and
    ``to_dict`` (the stored JSON, key for key as earlier versions wrote it). ``merge`` gives
    the part of a record pooled from a cell's interleaved rounds: the first round's, unless
    the part pools its rounds."""

    @classmethod
    def from_dict(cls, data: Any, name: str) -> typing.Self:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def merge(cls, rounds: typing.Sequence[typing.Self | None]) -> typing.Self | None:
        return rounds[0] if rounds else None


def without_none(pairs: dict[str, Any]) -> dict[str, Any]:
    """The keys whose value is set: for parts whose writers leave unset keys out."""
    return {k: v for k, v in pairs.items() if v is not None}
