"""Metadata filters: `--filter key=value` parsed and matched in Python (`ragcli.store.filters` is their SQL).

Semantics (as LazyLLM's filters): values of one key are OR-ed, keys are AND-ed.
A value may be

- a plain value: equality (`file_type=pdf`); for `path` it is a glob (`path=*/notes/*`);
- a comparison `>=V`, `>V`, `<=V`, `<V`, `!=V`: comparisons of one key are AND-ed with each
  other and with the OR of its plain values, so `modified=>=2024-01-01 modified=<2025-01-01`
  is a range.

Dates (`modified`, `created`, a mail's `date`) are ISO-8601 strings; a value is compared with the stored
string cut to the value's length, so `modified=2024-05-01` means "that day" and
`modified=<=2024-12-31` includes the whole of that day.
Any other key is looked up in the documents' free-form metadata JSON (a list value matches
when any element does).
"""

from __future__ import annotations

import fnmatch
import json
import re
from typing import Any, Iterable, Mapping

from ragcli.errors import UnknownFilter, UsageError
from ragcli.store.filters import (
    COLUMNS,
    DATE_KEYS,
    Condition,
    Filters,
    as_flag,
    as_number,
    filters_sql,
    normalise,
    parse_condition,
)

# `filters_sql` and `parse_condition` are re-exported: callers find every filter function here.
__all__ = [
    "COLUMNS",
    "DATE_KEYS",
    "Condition",
    "Filters",
    "check_keys",
    "filters_sql",
    "matches",
    "parse_condition",
    "parse_filters",
]


_NATURAL = re.compile(r"^\s*([^=<>!\s]+)\s*(>=|<=|!=|>|<)(.*)$")
# A value to show in a message about the key's filter.
_EXAMPLE_VALUES = {"file_type": "pdf", "modified": "2024-01-01", "created": "2024-01-01", "path": "*/notes/*"}
_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2}([T ]\d{2}(:\d{2}(:\d{2})?)?)?)?)?$")


def parse_filters(pairs: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Parse repeated `key=value` strings into `{key: (value, ...)}`.

    `key>=value` (and `<=`, `>`, `<`, `!=`) is accepted as the natural spelling of
    `key=>=value`. Dates must be ISO-8601 (a year, month, day or a time).

    Raises:
        UsageError: a pair has no `=` or an empty key, or a date value does not parse; the
            message names the filter.
    """
    filters: dict[str, list[str]] = {}
    for pair in pairs:
        natural = _NATURAL.match(pair)
        if natural and "=" not in natural.group(1):
            key, value = natural.group(1), natural.group(2) + natural.group(3)
        else:
            key, sep, value = pair.partition("=")
            if not sep:
                key = ""
        key = key.strip()
        if not key:
            raise UsageError(
                f"--filter '{pair}': write key=value, e.g. --filter file_type=pdf "
                "or --filter 'modified>=2024-01-01'"
            )
        condition = parse_condition(value.strip())
        _check_operand(pair, key, condition)
        if key in DATE_KEYS:
            _check_date(pair, condition.value)
        filters.setdefault(key, []).append(value.strip())
    return {key: tuple(values) for key, values in filters.items()}


def _check_operand(pair: str, key: str, condition: Condition) -> None:
    """Refuse a filter with nothing to compare with (`file_type=`, `size>`), which would match
    nothing or everything without a word, and a doubled `=` (`file_type==pdf`), which would
    look for a value starting with '='.

    Raises:
        UsageError: names the filter and shows the spelling that works.
    """
    op = "" if condition.op == "=" else condition.op
    if not condition.value:
        raise UsageError(
            f"--filter '{pair}': no value after '{op or '='}'; write a value, e.g. "
            f"--filter '{key}{op or '='}{_EXAMPLE_VALUES.get(key, 'VALUE')}'"
        )
    if condition.value.startswith("="):
        written = f"{key}{op or '='}{condition.value.lstrip('=')}"
        raise UsageError(f"--filter '{pair}': one '=' compares; write --filter '{written}'")


def _check_date(pair: str, value: str) -> None:
    """Refuse a date that is not ISO-8601 (`2024`, `2024-05`, `2024-05-01`, `2024-05-01T10:00`)."""
    from datetime import date, datetime

    try:
        if not _DATE.match(value):
            raise ValueError(value)
        if len(value) >= 10:
            datetime.fromisoformat(value) if len(value) > 10 else date.fromisoformat(value)
        elif len(value) == 7 and not 1 <= int(value[5:7]) <= 12:
            raise ValueError(value)
    except ValueError:
        raise UsageError(
            f"--filter '{pair}': '{value}' is not a date; write an ISO date such as "
            "--filter 'modified>=2024-01-01' (or 2024, 2024-05, 2024-05-01T10:00)"
        ) from None


def check_keys(filters: Filters, known: Iterable[str]) -> None:
    """Refuse keys no document carries.

    Raises:
        UnknownFilter: names the key and lists the known ones.
    """
    known_set = set(known) | set(COLUMNS)
    for key in filters:
        if key not in known_set:
            raise UnknownFilter(f"unknown filter key '{key}': known keys are {', '.join(sorted(known_set))}")


def _compare(op: str, stored: Any, wanted: Any, glob: bool) -> bool:
    if op in ("=", "!="):
        equal = fnmatch.fnmatchcase(stored, wanted) if glob else stored == wanted
        return equal == (op == "=")
    return {">=": stored >= wanted, "<=": stored <= wanted, ">": stored > wanted, "<": stored < wanted}[op]


def _value_matches(key: str, stored: Any, condition: Condition) -> bool:
    items = [] if stored is None else stored if isinstance(stored, list) else [stored]
    wanted = normalise(key, condition.value)
    number = as_number(key, condition.op, wanted)
    if number is not None:
        # Stored numbers (pages, size) compare as numbers, as the SQL twin does.
        numbers = [item for item in items if isinstance(item, (int, float)) and not isinstance(item, bool)]
        if any(_compare(condition.op, item, number, False) for item in numbers):
            return True
        items = [item for item in items if item not in numbers]
    texts = [_as_text(item)[: len(wanted)] if key in DATE_KEYS else _as_text(item) for item in items]
    flag = as_flag(key, condition.op, wanted)
    # `ocr=true` matches a stored true, as the SQL twin does (a stored boolean also reads 1/0).
    flagged = flag is not None and any(item is (flag == "true") for item in items)
    if condition.op == "!=":
        # "not equal" is the negation of "equal", so a missing key passes it.
        return not flagged and not any(_compare("=", text, wanted, key == "path") for text in texts)
    return flagged or any(_compare(condition.op, text, wanted, key == "path") for text in texts)


def _as_text(item: Any) -> str:
    if isinstance(item, bool):
        return str(int(item))  # SQLite's json_each gives 1/0 for true/false
    return item if isinstance(item, str) else json.dumps(item)


def matches(filters: Filters, metadata: Mapping[str, Any]) -> bool:
    """Whether a document's metadata (with `path`) passes the filters; the SQL's twin."""
    for key, values in filters.items():
        conditions = [parse_condition(v) for v in values]
        plain = [c for c in conditions if c.op == "="]
        ranges = [c for c in conditions if c.op != "="]
        stored = metadata.get(key)
        if plain and not any(_value_matches(key, stored, c) for c in plain):
            return False
        if not all(_value_matches(key, stored, c) for c in ranges):
            return False
    return True
