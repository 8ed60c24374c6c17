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
    "ParsedFilters",
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


# Each filter error in the three forms a caller writes filters in, so the message names the
# filter, and shows its fix, the way the caller wrote it: `--filter 'key=value'` on the command
# line, "key=value" strings in a list (JSON, Python), or one key of a JSON object.
# The JSON forms' fields come quoted as JSON strings.
_MESSAGES = {
    "flag": {
        "no_key": "--filter '{pair}': write key=value, e.g. --filter file_type=pdf "
        "or --filter 'modified>=2024-01-01'",
        "no_value": "--filter '{pair}': no value after '{op}'; write a value, e.g. --filter '{example_pair}'",
        "doubled": "--filter '{pair}': one '=' compares; write --filter '{fixed_pair}'",
        "date": "--filter '{pair}': '{value}' is not a date; write an ISO date such as "
        "--filter 'modified>=2024-01-01' (or 2024, 2024-05, 2024-05-01T10:00)",
        "unknown": "unknown filter key '{key}': known keys are {known}",
    },
    "pair": {
        "no_key": 'filters: {pair}: write key=value, e.g. "file_type=pdf" or "modified>=2024-01-01"',
        "no_value": "filters: {pair}: no value after {op}; write a value, e.g. {example_pair}",
        "doubled": "filters: {pair}: one {equals} compares; write {fixed_pair}",
        "date": "filters: {pair}: {value} is not a date; write an ISO date such as "
        '"modified>=2024-01-01" (or 2024, 2024-05, 2024-05-01T10:00)',
        "unknown": "unknown filter key '{key_text}': known keys are {known}",
    },
    "field": {
        "no_key": 'filters: {key} is not a key; write a metadata key, e.g. {{"file_type": "pdf"}}',
        "no_value": "filters.{key_text}: no value after {op}; write a value, e.g. {example_value}",
        "empty": "filters.{key_text}: an empty value; write a value, e.g. {example_value}",
        "doubled": "filters.{key_text}: {written} has one {equals} too many; write {fixed_value}",
        "date": "filters.{key_text}: {value} is not a date; write an ISO date such as "
        '">=2024-01-01" (or 2024, 2024-05, 2024-05-01T10:00)',
        "unknown": "filters.{key_text}: unknown filter key; known keys are {known}",
    },
}


class ParsedFilters(dict):
    """`{key: (value, ...)}` remembering the form each key was written in (see `_MESSAGES`), so
    a key no document carries is named the caller's way when the search finds it unknown."""

    def __init__(self, values: Any = (), forms: Mapping[str, str] | None = None) -> None:
        # One argument as `dict` takes it too: `dataclasses.asdict` rebuilds a dict that way.
        super().__init__(values)
        self.forms = dict(forms or {})


def parse_filters(written: Iterable[str | tuple[str, str]], *, command_line: bool = False) -> ParsedFilters:
    """Parse filters into `{key: (value, ...)}`: `key=value` strings, or (key, value) pairs
    for the values of a JSON object's keys.

    `key>=value` (and `<=`, `>`, `<`, `!=`) is accepted as the natural spelling of
    `key=>=value`. Dates must be ISO-8601 (a year, month, day or a time).

    Args:
        written: the filters as the caller wrote them.
        command_line: the strings are `--filter` values (errors say `--filter '...'`).

    Raises:
        UsageError: a pair has no `=` or an empty key, a value is empty or has a doubled `=`, or
            a date value does not parse; the message names the filter as it was written.
    """
    filters: dict[str, list[str]] = {}
    forms: dict[str, str] = {}
    for item in written:
        form = "field" if isinstance(item, tuple) else "flag" if command_line else "pair"
        key, value = item if isinstance(item, tuple) else _split_pair(item)
        key, value = key.strip(), value.strip()
        say = _Messages(form, item if isinstance(item, str) else f"{key}={value}", key, value)
        if not key:
            raise UsageError(say("no_key"))
        condition = parse_condition(value)
        _check_operand(say, key, condition)
        if key in DATE_KEYS:
            _check_date(say, condition.value)
        filters.setdefault(key, []).append(value)
        forms.setdefault(key, form)
    return ParsedFilters({key: tuple(values) for key, values in filters.items()}, forms)


def _split_pair(pair: str) -> tuple[str, str]:
    """(key, value) of `key=value` or `key>=value`; an empty key when there is no `=`."""
    natural = _NATURAL.match(pair)
    if natural and "=" not in natural.group(1):
        return natural.group(1), natural.group(2) + natural.group(3)
    key, sep, value = pair.partition("=")
    return (key, value) if sep else ("", value)


class _Messages:
    """The error messages about one filter, in the form it was written in."""

    def __init__(self, form: str, pair: str, key: str, written: str) -> None:
        self.form, self.pair, self.key, self.written = form, pair, key, written

    def __call__(self, problem: str, known: str = "", **fields: str) -> str:
        """The message about `problem`; `fields` are quoted as the form quotes (JSON strings
        but on the command line), `known` (a list of keys) is not."""
        quote = (lambda text: text) if self.form == "flag" else _json_text
        named = {"pair": self.pair, "key": self.key, "written": self.written, "equals": "=", **fields}
        quoted = {name: quote(text) for name, text in named.items()}
        return _MESSAGES[self.form][problem].format(key_text=self.key, known=known, **quoted)


def _json_text(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _check_operand(say: _Messages, key: str, condition: Condition) -> None:
    """Refuse a filter with nothing to compare with (`file_type=`, `size>`), which would match
    nothing or everything without a word, and a doubled `=` (`file_type==pdf`), which would
    look for a value starting with '='.

    Raises:
        UsageError: names the filter and shows the spelling that works.
    """
    op = "" if condition.op == "=" else condition.op
    if not condition.value:
        example = _EXAMPLE_VALUES.get(key, "VALUE")
        problem = "empty" if say.form == "field" and not op else "no_value"
        pair = f"{key}{op or '='}{example}"
        raise UsageError(say(problem, op=op or "=", example_pair=pair, example_value=op + example))
    if condition.value.startswith("="):
        fixed = condition.value.lstrip("=")
        pair = f"{key}{op or '='}{fixed}"
        raise UsageError(say("doubled", fixed_pair=pair, fixed_value=op + fixed))


def _check_date(say: _Messages, value: str) -> None:
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
        raise UsageError(say("date", value=value)) from None


def check_keys(filters: Filters, known: Iterable[str]) -> None:
    """Refuse keys no document carries.

    Raises:
        UnknownFilter: names the key as it was written and lists the known ones.
    """
    known_set = set(known) | set(COLUMNS)
    forms = getattr(filters, "forms", {})
    for key in filters:
        if key not in known_set:
            say = _Messages(forms.get(key, "flag"), "", key, "")
            raise UnknownFilter(say("unknown", known=", ".join(sorted(known_set))))


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
