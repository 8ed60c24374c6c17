"""Metadata filters as SQL over `documents d`: the conditions' vocabulary and their WHERE clause.

`ragcli.retrieval.filters` parses what the user writes (`--filter key=value`) and matches in
Python; this module turns the same filters into SQL, so the two agree on every condition.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from sqlite_utils import Database

COLUMNS = ("file_name", "file_type", "path", "title", "modified", "created")
# `date` is a mail message's sent date (metadata), compared by prefix like the file dates.
DATE_KEYS = frozenset({"modified", "created", "date"})
# A mail's addresses (`to` holds Cc too), which the mail reader stores in lower case.
ADDRESS_KEYS = frozenset({"from", "to"})
_OPERATORS = (">=", "<=", "!=", ">", "<")  # two-character ones first
ORDERING = frozenset({">=", "<=", ">", "<"})

Filters = Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class Condition:
    """One parsed filter value: an operator ("=" for plain values) and its operand."""

    op: str
    value: str


def parse_condition(value: str) -> Condition:
    """Split a filter value into operator and operand (`>=2024-01-01` -> (">=", "2024-01-01"))."""
    for op in _OPERATORS:
        if value.startswith(op):
            return Condition(op, value[len(op) :].strip())
    return Condition("=", value)


def normalise(key: str, value: str) -> str:
    """A filter value as stored: types are stored as "pdf" (accept ".pdf" and "PDF" too) and
    mail addresses in lower case (accept `Alice@Example.com`)."""
    if key == "file_type":
        return value.lower().lstrip(".")
    return value.lower() if key in ADDRESS_KEYS else value


def as_flag(key: str, op: str, value: str) -> str | None:
    """A metadata filter's operand "true"/"false" (any case) under = or !=, as json_each names a
    stored boolean's type ("true"/"false"), so `ocr=true` matches ``"ocr": true`` as `ocr=1`
    does; None otherwise (a column, another operator or value)."""
    lowered = value.lower()
    return lowered if key not in COLUMNS and op in ("=", "!=") and lowered in ("true", "false") else None


def as_number(key: str, op: str, value: str) -> float | None:
    """A metadata filter's operand under <, <=, > or >= as a number when it is one
    (`pages>=10`), else None: stored numbers then compare as numbers."""
    if key in COLUMNS or op not in ORDERING:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if number == number else None  # NaN orders nothing


# json_each's value as text the way `_as_text` renders it in Python.
_JSON_TEXT = (
    "CASE WHEN type = 'true' THEN '1' WHEN type = 'false' THEN '0' "
    "WHEN type IN ('object', 'array') THEN json(value) ELSE CAST(value AS TEXT) END"
)


def _condition_sql(key: str, condition: Condition, params: list[Any]) -> str:
    """One condition as SQL over `documents d`; appends its params."""
    wanted = normalise(key, condition.value)
    if key in COLUMNS:
        stored = f"substr(d.{key}, 1, {len(wanted)})" if key in DATE_KEYS else f"d.{key}"
    else:
        stored = f"substr({_JSON_TEXT}, 1, {len(wanted)})" if key in DATE_KEYS else _JSON_TEXT
        params.append("$." + json.dumps(key))
    positive = "=" if condition.op == "!=" else condition.op
    test = f"{stored} {'GLOB' if key == 'path' and positive == '=' else positive} ?"
    number = as_number(key, condition.op, wanted)
    if number is not None:
        # Stored numbers (pages, size) compare as numbers: "4" >= "10" as text.
        test = f"(CASE WHEN type IN ('integer', 'real') THEN value {positive} ? ELSE {test} END)"
        params.append(number)
    params.append(wanted)
    flag = as_flag(key, condition.op, wanted)
    if flag is not None:  # a stored boolean reads 1/0 as text (`_JSON_TEXT`)
        test = f"({test} OR type = ?)"
        params.append(flag)
    if key not in COLUMNS:
        test = f"EXISTS (SELECT 1 FROM json_each(d.metadata, ?) WHERE {test})"
    # `!=` negates equality, so a document without the key passes (NULL-safe via coalesce).
    return f"NOT coalesce({test}, 0)" if condition.op == "!=" else f"({test})"


def filters_sql(filters: Filters) -> tuple[str, list[Any]]:
    """Turn filters into a WHERE clause over `documents d` (and its params); "" when none."""
    clauses: list[str] = []
    params: list[Any] = []
    for key, values in filters.items():
        conditions = [parse_condition(v) for v in values]
        plain = [_condition_sql(key, c, params) for c in conditions if c.op == "="]
        if plain:
            clauses.append("(" + " OR ".join(plain) + ")")
        clauses.extend(_condition_sql(key, c, params) for c in conditions if c.op != "=")
    return " AND ".join(clauses), params


def known_keys(db: Database) -> list[str]:
    """Filter keys this index knows: the document columns plus every metadata JSON key."""
    rows = db.execute("SELECT DISTINCT j.key FROM documents d, json_each(d.metadata) j").fetchall()
    return sorted(set(COLUMNS) | {row[0] for row in rows})
