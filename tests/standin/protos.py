"""Google's published Gemini API contract, read from its .proto files, to check request bodies.

Google's servers parse a REST body with the proto3 JSON mapping of the request message of the
version in the path (`/v1beta/models/m:generateContent` -> `google.ai.generativelanguage.v1beta.
GenerateContentRequest`) and refuse a key the message lacks: 400 INVALID_ARGUMENT "Invalid JSON
payload received. Unknown name \"systemInstruction\": Cannot find field." (the field path is
added for a nested key: `... Unknown name "x" at 'contents[1].parts[0]': ...`; seen in
https://github.com/googleapis/python-genai/issues/425 and
https://github.com/vercel/ai/pull/2256). Each field is known by its proto name (snake_case) and
its JSON name (lowerCamelCase, or its `json_name` option): the parser takes either.

The protos are copies under tests/fixtures/googleapis (see its README for where and which
commit). This is a small reader, enough for those files: messages (nested too), fields,
`oneof` members, `map<>` fields, `repeated`, `json_name`, and type names resolved the way
protoc does (innermost scope outwards). Enums are known by name; their values are not checked.
Services, options and imports outside the package are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "googleapis"
PACKAGE = "google.ai.generativelanguage"
# Well-known types with a special JSON form: any JSON value (Value, Struct, ListValue, Any's
# fields), or a string (Duration "3.5s", Timestamp, FieldMask).
_ANY_JSON = {"google.protobuf.Value", "google.protobuf.Struct", "google.protobuf.ListValue",
             "google.protobuf.Any"}
_STRING_FORM = {"google.protobuf.Duration", "google.protobuf.Timestamp",
                "google.protobuf.FieldMask"}
_SCALARS = {"double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
            "fixed32", "fixed64", "sfixed32", "sfixed64", "bool", "string", "bytes"}
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[A-Za-z_.][\w.]*|\d+|\S')
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


@dataclass(frozen=True)
class Field:
    name: str          # proto name, snake_case
    json_name: str
    type: str          # as written in the file (resolved on use)
    repeated: bool = False
    map_value: bool = False  # map<K, type>: a JSON object of `type` values


@dataclass
class Message:
    full_name: str
    fields: dict[str, Field] = field(default_factory=dict)  # by proto name and by JSON name


@dataclass
class Contract:
    """The messages and enums of one API version."""

    version: str
    messages: dict[str, Message] = field(default_factory=dict)
    enums: set[str] = field(default_factory=set)

    def resolve(self, scope: str, name: str) -> str:
        """The full name of type `name` used inside message `scope` (protoc's lookup)."""
        if name in _SCALARS:
            return name
        if name.startswith("."):
            return name[1:]
        parts = scope.split(".")
        while parts:
            candidate = ".".join(parts + [name])
            if candidate in self.messages or candidate in self.enums:
                return candidate
            parts.pop()
        return name  # fully qualified, or outside the files read (reported when reached)

    def unknown_names(self, message: str, body: Any) -> list[tuple[str, str]]:
        """Every key of `body` (recursively) that message `message` of this version has no
        field for: (the key, the proto path of the object it sits in, '' at the top)."""
        found: list[tuple[str, str]] = []
        self._walk(f"{PACKAGE}.{self.version}.{message}", body, "", found)
        return found

    def _walk(self, full_name: str, body: Any, path: str, found: list[tuple[str, str]]) -> None:
        if full_name in _ANY_JSON or full_name in _STRING_FORM or full_name in _SCALARS:
            return
        if full_name in self.enums or not isinstance(body, dict):
            return
        message = self.messages.get(full_name)
        if message is None:
            raise KeyError(f"{full_name} is not in the protos read for {self.version}; copy its "
                           "file into tests/fixtures/googleapis")
        for key, value in body.items():
            spec = message.fields.get(key)
            if spec is None:
                found.append((key, path))
                continue
            where = f"{path}.{spec.name}" if path else spec.name
            kind = self.resolve(full_name, spec.type)
            if spec.map_value and isinstance(value, dict):
                for k, item in value.items():
                    self._walk(kind, item, f"{where}[{k}]", found)
            elif spec.repeated and isinstance(value, list):
                for i, item in enumerate(value):
                    self._walk(kind, item, f"{where}[{i}]", found)
            else:
                self._walk(kind, value, where, found)


def json_name(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def unknown_name_error(names: list[tuple[str, str]]) -> dict[str, Any]:
    """Google's 400 body for a request with keys its version lacks (the first one named)."""
    key, path = names[0]
    where = f" at '{path}'" if path else ""
    text = f'Invalid JSON payload received. Unknown name "{key}"{where}: Cannot find field.'
    violation = {"field": path, "description": text} if path else {"description": text}
    return {"error": {"code": 400, "message": text, "status": "INVALID_ARGUMENT", "details": [
        {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [violation]}]}}


@cache
def contract(version: str) -> Contract | None:
    """The contract of `version` ("v1", "v1beta") from the fixture protos; None when no protos
    of that version were copied (nothing is checked then)."""
    folder = ROOT / "google" / "ai" / "generativelanguage" / version
    if not folder.is_dir():
        return None
    out = Contract(version)
    for path in sorted(folder.glob("*.proto")):
        _parse(path.read_text(encoding="utf-8"), out)
    return out


def _parse(text: str, out: Contract) -> None:
    tokens = _TOKEN.findall(_COMMENT.sub(" ", text))
    package = ""
    i = 0
    while i < len(tokens):
        if tokens[i] == "package":
            package = tokens[i + 1]
            i = _skip_statement(tokens, i)
        elif tokens[i] in ("message", "enum"):
            i = _block(tokens, i, package, out)
        elif tokens[i] in ("service", "extend"):
            i = _skip_block(tokens, i)
        else:
            i = _skip_statement(tokens, i)


def _block(tokens: list[str], i: int, scope: str, out: Contract) -> int:
    """Read `message Name {...}` or `enum Name {...}` at tokens[i]; the index after it."""
    kind, name = tokens[i], tokens[i + 1]
    full_name = f"{scope}.{name}"
    if kind == "enum":
        out.enums.add(full_name)
        return _skip_block(tokens, i)
    message = out.messages.setdefault(full_name, Message(full_name))
    i += 3  # message Name {
    while tokens[i] != "}":
        word = tokens[i]
        if word in ("message", "enum"):
            i = _block(tokens, i, full_name, out)
        elif word == "oneof":
            i += 3  # oneof name {
            while tokens[i] != "}":
                i = _field(tokens, i, message)
            i += 1
        elif word in ("option", "reserved", "extensions", ";"):
            i = _skip_statement(tokens, i)
        elif word == "extend":
            i = _skip_block(tokens, i)
        else:
            i = _field(tokens, i, message)
    return i + 1


def _field(tokens: list[str], i: int, message: Message) -> int:
    """Read one field declaration at tokens[i]; the index after its `;`."""
    repeated = tokens[i] == "repeated"
    if tokens[i] in ("repeated", "optional", "required"):
        i += 1
    map_value = tokens[i] == "map"
    if map_value:  # map < K , V > name = N
        type_name, i = tokens[i + 4], i + 6
    else:
        type_name, i = tokens[i], i + 1
    name = tokens[i]
    end = _skip_statement(tokens, i)
    options = tokens[i:end]
    spec_json = json_name(name)
    for k in range(len(options) - 2):
        if options[k] == "json_name" and options[k + 1] == "=":
            spec_json = options[k + 2].strip('"')
    spec = Field(name, spec_json, type_name, repeated, map_value)
    message.fields[name] = spec
    message.fields[spec_json] = spec
    return end


def _skip_statement(tokens: list[str], i: int) -> int:
    """The index after the `;` ending the statement at tokens[i] (brackets and braces in its
    options skipped)."""
    depth = 0
    while i < len(tokens):
        token = tokens[i]
        if token in ("[", "{", "("):
            depth += 1
        elif token in ("]", "}", ")"):
            depth -= 1
        elif token == ";" and depth == 0:
            return i + 1
        i += 1
    return i


def _skip_block(tokens: list[str], i: int) -> int:
    """The index after the `}` closing the first `{` from tokens[i]."""
    while tokens[i] != "{":
        i += 1
    depth = 0
    while True:
        if tokens[i] == "{":
            depth += 1
        elif tokens[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
