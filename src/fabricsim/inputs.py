"""Reading input files: YAML or JSON text -> plain data -> a schema (msgspec), every problem one FabricsimError
that names the file, the field path and the fix.

Schemas live beside what they describe (the cluster spec in topology.spec, the model spec in training.models,
calibration rows in validation.calibration): frozen dataclasses or msgspec Structs whose field types carry their
ranges (`Annotated[int, Meta(ge=1, le=...)]`), so one definition checks files, checks objects built in code
(`check_fields`) and gives the JSON Schema editors validate against (`json_schema`).
msgspec, not pydantic: it imports in ~10 ms (pydantic ~150 ms) against a CLI budget of 0.35 s.
"""

from __future__ import annotations

import functools
import re
import typing
from pathlib import Path

import msgspec

from fabricsim.errors import FabricsimError

_PATH = re.compile(r"^(?P<msg>.*?)(?: - at `(?P<path>[^`]*)`(?: in `(?P<parent>[^`]*)`)?)?$", re.DOTALL)
_FIELD = re.compile(r"`([^`]*)`")


def read_text(path: str | Path, what: str) -> str:
    """The UTF-8 text of `path`; unreadable or binary files are a FabricsimError naming `what` the file is."""
    path = Path(path)
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as err:
        raise FabricsimError(f"cannot read {what} {path}: {err.strerror}; check the path") from None
    except UnicodeDecodeError as err:
        raise FabricsimError(f"{what} {path} is not UTF-8 text (byte {err.start}): give a text file") from None


@functools.cache
def _yaml_loader():
    """PyYAML's safe loader (libyaml's when present: fast, and it bounds nesting at 1,000 levels) reading
    exponent floats without a dot ('4e2', '1E+3') as numbers, as YAML 1.2 does, rather than as text."""
    import yaml

    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        def construct_mapping(self, node, deep=False):
            _check_unique_keys(self, node)
            return super().construct_mapping(node, deep=deep)

    Loader.add_implicit_resolver("tag:yaml.org,2002:float",
                                 re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
                                 list("-+0123456789."))
    return Loader


class _DuplicateKey(Exception):
    """A mapping names one key twice (PyYAML keeps the last silently); parse_yaml words it with the file."""

    def __init__(self, key: object, first: int, second: int):
        super().__init__(key, first, second)
        self.key, self.first, self.second = key, first, second


def _check_unique_keys(loader, node) -> None:
    """Raise _DuplicateKey where the mapping `node` names a key twice (merge keys '<<' may override: YAML's rule)."""
    import yaml

    seen: dict[object, int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key, line = loader.construct_object(key_node), key_node.start_mark.line + 1  # a scalar: hashable
        if key in seen:
            raise _DuplicateKey(key, seen[key], line)
        seen[key] = line


def parse_yaml(text: str, where: str) -> object:
    """Plain data of one YAML document; malformed or too deeply nested text is a FabricsimError at `where`."""
    import yaml

    try:
        return yaml.load(text, Loader=_yaml_loader())  # noqa: S506 (a safe loader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise FabricsimError(f"{where}{line}: malformed YAML ({problem}): fix the syntax there") from None
    except _DuplicateKey as dup:
        raise FabricsimError(f"key {dup.key!r} appears twice (lines {dup.first} and {dup.second}) in {where}: "
                             "keep one") from None
    except RecursionError:
        raise FabricsimError(f"{where}: the YAML nests too deeply to read: a fabricsim input is a flat mapping "
                             "of fields") from None
    except (ValueError, TypeError, OverflowError) as err:  # a tag PyYAML cannot construct, e.g. '!!float x'
        raise FabricsimError(f"{where}: a YAML value cannot be read ({err}): fix or quote it") from None


def parse_json(text: str, where: str) -> object:
    """Plain data of one JSON document (NaN / Infinity tokens read as floats, for the schema to reject); a key named
    twice in one object is an error (json keeps the last silently)."""
    import json

    def unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
        out: dict[str, object] = {}
        for key, value in pairs:
            if key in out:
                raise FabricsimError(f"key {key!r} appears twice in one object in {where}: keep one")
            out[key] = value
        return out

    try:
        return json.loads(text, object_pairs_hook=unique)
    except json.JSONDecodeError as err:
        raise FabricsimError(f"{where}: not valid JSON ({err.msg} at column {err.colno}): "
                             "fix the syntax there") from None
    except RecursionError:
        raise FabricsimError(f"{where}: the JSON nests too deeply to read") from None


def convert(data: object, schema: type, where: str, hint: str = "") -> typing.Any:
    """`data` (a mapping from YAML or JSON) as an instance of `schema`; every problem one FabricsimError
    '<where>: <field path and problem>: <fix>' (`hint` is added to unknown- and missing-key messages)."""
    info = _info(schema)
    if not isinstance(data, dict):
        raise FabricsimError(f"{where}: expected a mapping of fields ({_example(info)}), got {_kind(data)}")
    _check_keys(data, info, where, hint)
    try:
        return msgspec.convert(data, schema)
    except msgspec.ValidationError as err:
        raise FabricsimError(f"{where}: {_explain(str(err), data, info, hint)}") from None
    except FabricsimError as err:  # a dataclass' own cross-field checks (__post_init__)
        raise FabricsimError(f"{where}: {err}") from None
    except RecursionError:
        raise FabricsimError(f"{where}: a value nests too deeply: fields hold numbers, text or flat lists") from None


def check_fields(obj: object, what: str) -> None:
    """Check every field of dataclass `obj` against its annotated type and range, storing the converted value
    (an int given for a float field becomes a float): the same rules a file is read with."""
    for name, typ in _hints(type(obj)).items():
        value = getattr(obj, name)
        try:
            converted = msgspec.convert(value, typ)
        except (msgspec.ValidationError, RecursionError):
            raise FabricsimError(f"{what} field '{name}' is {show(value)}: it must be "
                                 f"{describe(typ)}") from None
        if type(converted) is not type(value) or converted != value:
            object.__setattr__(obj, name, converted)


def json_schema(schema: type) -> dict:
    """The JSON Schema (draft 2020-12) of `schema`, with its ranges, choices and defaults; unknown keys are
    refused there as `convert` refuses them."""
    doc = msgspec.json.schema(schema)
    for definition in doc.get("$defs", {}).values():
        if "properties" in definition:
            definition["additionalProperties"] = False
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **doc}


_HINTS: dict[type, dict[str, typing.Any]] = {}


def _hints(cls: type) -> dict[str, typing.Any]:
    if cls not in _HINTS:
        hints = typing.get_type_hints(cls, include_extras=True)
        _HINTS[cls] = {f: hints[f] for f in cls.__dataclass_fields__}  # type: ignore[attr-defined]
    return _HINTS[cls]


@functools.cache
def _info(schema):
    """The schema's msgspec type description, made once per schema (a pure function of the type, read and never
    changed here: a calibration set's rows are each converted against the same few)."""
    import msgspec.inspect

    return _plain(msgspec.inspect.type_info(schema))


def _plain(info):
    """A msgspec.inspect type without its Metadata wrapper (descriptions)."""
    import msgspec.inspect

    while isinstance(info, msgspec.inspect.Metadata):
        info = info.type
    return info


def _fields(info) -> dict:
    """Field name -> msgspec.inspect.Field of a struct / dataclass type (empty for anything else)."""
    return {f.encode_name: f for f in getattr(_plain(info), "fields", ())}


def _example(info) -> str:
    required = [name for name, f in _fields(info).items() if f.required][:3]
    return ", ".join(f"{name}: ..." for name in required) or "field: value"


def _kind(value: object) -> str:
    return {dict: "a mapping", list: "a list", str: "text", bool: "true/false", type(None): "nothing (null)"}.get(
        type(value), f"the number {value!r}" if isinstance(value, (int, float)) else type(value).__name__)


def show(value: object) -> str:
    """A value as the user wrote it (YAML / JSON spelling of null and booleans), shortened, for messages."""
    text = {None: "null", True: "true", False: "false"}.get(value, None) if isinstance(value, (bool, type(None))) \
        else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_keys(data: dict, info, where: str, hint: str, prefix: str = "") -> None:
    """Non-text and unknown keys of a dataclass mapping (msgspec ignores unknown keys there; Structs forbid them),
    in nested dataclass mappings and lists of them too (`prefix`: the path to this mapping, e.g. 'calibrated.')."""
    fields = _fields(info)
    if not fields:
        return
    for key in data:
        if not isinstance(key, str):
            inside = f" of '{prefix.rstrip('.')}'" if prefix else ""
            raise FabricsimError(f"{where}: key {show(key)}{inside} is not a field name: keys are text, e.g. "
                                 f"{next(iter(fields))}: ... (quote a key meant as text)")
        if key not in fields:
            raise FabricsimError(f"{where}: {_unknown(prefix + key, key, fields, hint)}")
        value, inner = data[key], _member(fields[key].type, data[key])
        if isinstance(value, dict):
            _check_keys(value, inner, where, hint, f"{prefix}{key}.")
        elif isinstance(value, list) and hasattr(inner, "item_type"):
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    _check_keys(item, _member(inner.item_type, item), where, hint, f"{prefix}{key}[{i}].")


def closest(name: str, choices) -> str | None:
    """The choice `name` most likely misspells (difflib's closest match), or None."""
    import difflib

    close = difflib.get_close_matches(name, list(choices), n=1)
    return close[0] if close else None


def _unknown(path: str, key: str, fields: dict, hint: str) -> str:
    close = closest(key, fields)
    guess = f" (did you mean '{close}'?)" if close else ""
    return f"unknown key '{path}'{guess}: valid keys are {', '.join(fields)}{hint}"


def _split(path: str) -> list[str | int]:
    """'$.hardware.nodes[2]' -> ['hardware', 'nodes', 2]."""
    return [int(index) if index else name for name, index in re.findall(r"\.([^.\[\]]+)|\[(\d+)\]", path)]


def _at(data, info, steps: list):
    """(value, type info) at `steps` inside `data` / `info` (value None where the data has nothing there)."""
    value = data
    for step in steps:
        info = _member(info, value)
        if isinstance(step, int):
            value = value[step] if isinstance(value, list) and step < len(value) else None
            info = getattr(info, "item_type", None)
        else:
            value = value.get(step) if isinstance(value, dict) else None
            f = _fields(info).get(step)
            info = f.type if f is not None else getattr(info, "value_type", None)
    return value, _member(info, value)


def _member(info, value):
    """The member of a union that `value` was checked against: the tagged struct its tag names, else the mapping."""
    info = _plain(info)
    types = getattr(info, "types", None)
    if types is None or not isinstance(value, (dict, list)):
        return info
    for t in types:
        tag_field = getattr(t, "tag_field", None)
        if tag_field is not None and isinstance(value, dict) and value.get(tag_field) == t.tag:
            return t
    if isinstance(value, dict):  # a mapping was checked against the union's struct or dict member, a list against its list
        return next((t for t in map(_plain, types) if _fields(t) or hasattr(t, "value_type")), info)
    return next((t for t in map(_plain, types) if hasattr(t, "item_type")), info)


def _explain(message: str, data: dict, info, hint: str) -> str:
    """msgspec's validation message as 'field ... is ...: it must be ...' with the value found there."""
    m = _PATH.match(message)
    text, path = m.group("msg"), m.group("path") or "$"
    if m.group("parent") is not None:  # "Expected `str` - at `key` in `$.hardware`"
        parent = m.group("parent")
        mapping, _ = _at(data, info, _split(parent))
        key = next((k for k in mapping if not isinstance(k, str)), None) if isinstance(mapping, dict) else None
        inside = f" of '{_dotted(_split(parent))}'" if parent != "$" else ""
        return f"key {show(key)}{inside} is not a field name: keys are text"
    steps = _split(path)
    where = _dotted(steps)
    if text.startswith("Object missing required field"):
        name = _FIELD.search(text).group(1)
        mapping, container = _at(data, info, steps)  # every required key missing there, not only the first
        names = [k for k, f in _fields(container).items() if f.required and isinstance(mapping, dict)
                 and k not in mapping] or [name]
        full = [f"'{where}.{k}'" if where else f"'{k}'" for k in names]
        if len(full) == 1:
            return f"missing key {full[0]}: add it{hint}"
        return f"missing keys {', '.join(full[:-1])} and {full[-1]}: add them{hint}"
    if text.startswith("Object contains unknown field"):
        name = _FIELD.search(text).group(1)
        _, container = _at(data, info, steps)
        return _unknown(f"{where}.{name}" if where else name, name, _fields(container), hint)
    value, field_info = _at(data, info, steps)
    return f"field '{where}' is {show(value)}: it must be {describe(field_info)}"


def _dotted(steps: list) -> str:
    return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in steps).lstrip(".")


def _num(x: float) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:,g}"


def _range(t) -> str:
    """' from 1 to 8', ' >= 0', ' > 0 and < 1' for a msgspec.inspect int or float type."""
    if t.ge is not None and t.le is not None:
        return f" from {_num(t.ge)} to {_num(t.le)}"
    lo = f">= {_num(t.ge)}" if t.ge is not None else f"> {_num(t.gt)}" if t.gt is not None else ""
    hi = f"<= {_num(t.le)}" if t.le is not None else f"< {_num(t.lt)}" if t.lt is not None else ""
    parts = [p for p in (lo, hi) if p]
    return " " + " and ".join(parts) if parts else ""


def describe(typ) -> str:
    """What a value of this type (a Python type or a msgspec.inspect one) must be, in words:
    'a whole number from 1 to 2,097,152'."""
    import msgspec.inspect as mi

    info = _plain(typ if isinstance(typ, mi.Type) else mi.type_info(typ))
    if isinstance(info, mi.IntType):
        return "a whole number" + _range(info)
    if isinstance(info, mi.FloatType):
        return "a number" + _range(info)
    if isinstance(info, mi.BoolType):
        return "true or false"
    if isinstance(info, mi.StrType):
        return "non-empty text" if info.min_length else "text"
    if isinstance(info, mi.LiteralType):
        return "one of " + ", ".join(repr(v) if isinstance(v, str) else str(v) for v in info.values)
    if isinstance(info, mi.NoneType):
        return "null"
    if isinstance(info, mi.UnionType):
        return " or ".join(dict.fromkeys(describe(t) for t in info.types))
    if isinstance(info, (mi.ListType, mi.VarTupleType)) and (info.min_length or info.max_length is not None):
        lo, hi = info.min_length or 0, info.max_length
        items = (f"{lo:,} to {hi:,}" if lo and hi is not None else f"at least {lo:,}" if lo else f"at most {hi:,}")
        return f"a list of {items} items"
    if isinstance(info, (mi.ListType, mi.TupleType, mi.VarTupleType)):
        return "a list"
    if isinstance(info, mi.DictType) or _fields(info):
        return "a mapping"
    return "a valid value"

