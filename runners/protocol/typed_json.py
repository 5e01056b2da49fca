"""Dataclasses as JSON objects, read strictly, written back as they came, and described as JSON
Schema: the one machinery behind the runner's typed result (run_result.py).

A field's JSON key is its name, or ``metadata["key"]`` where the name cannot be (``from``). A
field without a default must be present. ``metadata["always"]`` marks a key every writer
writes (null when unknown); any other key is written when it holds a value or was present in
the object read. Keys a dataclass does not declare (a newer writer's) are dropped on reading,
as the record's parts drop them; the schema refuses them, so a writer that drifts is caught.

Runs on the device: Python 3.8+, standard library only.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Dict, FrozenSet, List, Type, TypeVar

T = TypeVar("T")

#: The JSON keys an object was read with, kept on it so that it is written with them again.
_PRESENT = "_json_present"
#: A field's metadata for a key every writer writes (null, or empty, when it has no value).
ALWAYS = {"always": True}
#: Each dataclass's field types, resolved once (``typing.get_type_hints`` is slow).
_HINTS: Dict[type, Dict[str, Any]] = {}


def key_of(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get("key", f.name))


def needs_key(f: dataclasses.Field[Any]) -> bool:
    """Whether a reader needs the field's key: it has no default."""
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def hints_of(cls: type) -> Dict[str, Any]:
    found = _HINTS.get(cls)
    if found is None:
        found = _HINTS[cls] = typing.get_type_hints(cls)
    return found


def json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _wrong(where: str, value: Any, expected: str) -> ValueError:
    return ValueError("%s must be %s, not a JSON %s" % (where, expected, json_kind(value)))


def read_value(hint: Any, value: Any, where: str) -> Any:
    """``value`` (decoded JSON) as the type ``hint`` says; ValueError naming ``where``."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any:
        return value
    if origin is typing.Union:
        if value is None and type(None) in args:
            return None
        kept = [a for a in args if a is not type(None)]
        if len(kept) == 1:
            return read_value(kept[0], value, where)
        for candidate in kept:
            try:
                return read_value(candidate, value, where)
            except ValueError:
                continue
        raise _wrong(where, value, " or ".join(describe(a) for a in kept))
    if origin is list:  # a tuple is a JSON array too, as json.dumps writes it
        if not isinstance(value, (list, tuple)):
            raise _wrong(where, value, "a list")
        return [read_value(args[0], v, "%s[%d]" % (where, i)) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise _wrong(where, value, "an object")
        return {k: read_value(args[1], v, "%s.%s" % (where, k)) for k, v in value.items()}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return read_object(hint, value, where)
    if hint is bool:
        if not isinstance(value, bool):
            raise _wrong(where, value, "true or false")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _wrong(where, value, "an integer")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _wrong(where, value, "a number")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise _wrong(where, value, "a string")
        return value
    raise TypeError("no JSON reading for %r" % (hint,))


def describe(hint: Any) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
    if hint in names:
        return names[hint]
    return "an object" if typing.get_origin(hint) is dict else "a list"


def read_object(cls: Type[T], data: Any, where: str) -> T:
    """The dataclass ``cls`` from the JSON object ``data``, each key checked against its field's
    type; an absent key leaves the field's default, and a required one is a ValueError."""
    if not isinstance(data, dict):
        raise _wrong(where, data, "an object")
    hints = hints_of(cls)
    values: Dict[str, Any] = {}
    present: List[str] = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]  # cls is a dataclass type
        key = key_of(f)
        if key not in data:
            if needs_key(f):
                raise ValueError("%s.%s is missing" % (where, key))
            continue
        values[f.name] = read_value(hints[f.name], data[key], "%s.%s" % (where, key))
        present.append(key)
    obj = cls(**values)
    object.__setattr__(obj, _PRESENT, frozenset(present))
    return obj


def write_value(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return write_object(value)
    if isinstance(value, list):
        return [write_value(v) for v in value]
    if isinstance(value, dict):
        return {k: write_value(v) for k, v in value.items()}
    return value


def write_object(obj: Any) -> Dict[str, Any]:
    """The dataclass ``obj`` as its JSON object, its fields in their order: the keys every
    writer writes, those it was read with, and any other that holds a value."""
    present: FrozenSet[str] = getattr(obj, _PRESENT, frozenset())
    out: Dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        key = key_of(f)
        value = getattr(obj, f.name)
        if value is not None or key in present or f.metadata.get("always"):
            out[key] = write_value(value)
    return out


def schema_of(hint: Any, definitions: Dict[str, Any]) -> Dict[str, Any]:
    """The JSON Schema of values of the type ``hint``; each dataclass goes into ``definitions``
    once, under its name, and is referred to from there."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any:
        return {}
    if origin is typing.Union:
        return {"anyOf": [schema_of(a, definitions) for a in args]}
    if origin is list:
        return {"type": "array", "items": schema_of(args[0], definitions)}
    if origin is dict:
        return {"type": "object", "additionalProperties": schema_of(args[1], definitions)}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        name = hint.__name__
        if name not in definitions:
            definitions[name] = {}  # placed first: a part that refers to itself stops here
            definitions[name] = _object_schema(hint, definitions)
        return {"$ref": "#/$defs/%s" % name}
    simple = {type(None): "null", bool: "boolean", int: "integer", float: "number", str: "string"}
    return {"type": simple[hint]}


def _object_schema(cls: type, definitions: Dict[str, Any]) -> Dict[str, Any]:
    hints = hints_of(cls)
    properties: Dict[str, Any] = {}
    required: List[str] = []
    for f in dataclasses.fields(cls):
        key = key_of(f)
        properties[key] = schema_of(hints[f.name], definitions)
        if needs_key(f) or f.metadata.get("always"):
            required.append(key)
    schema: Dict[str, Any] = {"type": "object", "properties": properties}
    if cls.__doc__:
        schema["description"] = " ".join(cls.__doc__.split())
    schema.update(required=required, additionalProperties=False)
    return schema


def document_schema(cls: type, title: str) -> Dict[str, Any]:
    """The JSON Schema (draft 2020-12) of objects of the dataclass ``cls``, its parts under
    ``$defs``."""
    definitions: Dict[str, Any] = {}
    document: Dict[str, Any] = {"title": title}
    document.update(_object_schema(cls, definitions))
    document["$defs"] = definitions
    return document
