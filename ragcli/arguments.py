"""Keyword arguments of an `Index` call checked against the option fields they set.

`Index.search(query, topk=3)` or `top_k="3"` would otherwise fail deep inside the search with
a bare `TypeError`, and `require="lens"` would quietly search for the letters l, e, n and s.
Each argument is checked by the type of its `QueryOptions` / `AskOptions` field; a single
string where the field holds several (`require`, `exclude`) is taken as one item.
"""

from __future__ import annotations

import math
import os
import types
from functools import cache
from typing import Any, Mapping, Sequence, Union, get_args, get_origin, get_type_hints

from ragcli.errors import UsageError

JsonFilters = Union[Mapping[str, Union[str, Sequence[str]]], Sequence[str], None]
_KINDS = {int: "a whole number", float: "a number", bool: "True or False", str: "a string"}


@cache
def field_types(kind: type) -> dict[str, Any]:
    """The field name -> type hint of an options dataclass, `None` taken out of optional ones."""
    hints = get_type_hints(kind)
    return {name: _not_none(hint) for name, hint in hints.items()}


def _not_none(hint: Any) -> Any:
    if isinstance(hint, types.UnionType) or get_origin(hint) is Union:
        kept = [arg for arg in get_args(hint) if arg is not type(None)]
        return kept[0] if len(kept) == 1 else hint
    return hint


def check_names(given: Mapping[str, Any], known: Mapping[str, Any], what: str) -> None:
    """Refuse an argument that names no option.

    Raises:
        UsageError: names the argument, the nearest known one and the known ones.
    """
    for name in given:
        if name not in known:
            import difflib  # only for the message: not on every call's import path

            near = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise UsageError(f"{what}: unknown argument {name!r}{hint}; known: {', '.join(known)}")


def checked(given: Mapping[str, Any], hints: Mapping[str, Any], what: str) -> dict[str, Any]:
    """`given` (its None values left out) with each value checked against its field's type.

    Raises:
        UsageError: an unknown argument, or a value of the wrong type (the message names it).
    """
    check_names(given, hints, what)
    values = {name: value for name, value in given.items() if value is not None}
    return {name: checked_value(name, value, hints[name]) for name, value in values.items()}


def checked_value(name: str, value: Any, hint: Any) -> Any:
    """`value` for a field typed `hint`: as it is, or a string or path made the field's tuple or str.

    Raises:
        UsageError: the value does not fit (the message names the argument).
    """
    origin = get_origin(hint)
    if origin is tuple:
        return _tuple(name, value, get_args(hint))
    if hint is str and isinstance(value, os.PathLike):
        return os.fspath(value)
    if hint in _KINDS:
        fits = isinstance(value, hint) and (hint is bool or not isinstance(value, bool))
        if hint is float:
            fits = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not fits:
            raise UsageError(f"{name} must be {_KINDS[hint]}, not {value!r}")
        if hint is float and not math.isfinite(value):  # refused as the CLI and `rag serve` do
            raise UsageError(f"{name} must be a finite number, not {value!r}")
        return value
    if isinstance(hint, type) and not isinstance(value, hint):
        raise UsageError(f"{name} must be {hint.__name__}, not {type(value).__name__}")
    return value


def _tuple(name: str, value: Any, items: tuple[Any, ...]) -> tuple:
    if len(items) == 2 and items[1] is Ellipsis:  # tuple[str, ...]: one string is one item
        values = (value,) if isinstance(value, str) else _sequence(name, value)
        return tuple(checked_value(name, item, items[0]) for item in values)
    values = _sequence(name, value)
    if len(values) != len(items):
        raise UsageError(f"{name} must hold {len(items)} values, not {len(values)}")
    return tuple(checked_value(name, item, kind) for item, kind in zip(values, items))


def _sequence(name: str, value: Any) -> tuple:
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise UsageError(f"{name} must be a list, not {value!r}")
    return tuple(value)


def checked_text(text: Any, what: str) -> str:
    """`text` if it is a string.

    Raises:
        UsageError: it is not (None, bytes, a number, a list ...).
    """
    if not isinstance(text, str):
        raise UsageError(f"{what} must be a string, not {type(text).__name__}")
    return text


# What every front end says to a query or question of whitespace only (`rag query`, the MCP
# tools, `rag serve`'s bodies), and so the Python API too.
BLANK_TEXT_HINTS = {"query": "give some words to search for", "question": "ask something"}


def checked_words(text: Any, what: str) -> str:
    """`text` if it is a string holding more than whitespace (`what`: query or question).

    Raises:
        UsageError: it is not a string, or is blank (nothing would be searched for).
    """
    if not checked_text(text, what).strip():
        raise UsageError(f"{what}: {BLANK_TEXT_HINTS[what]}")
    return text


def query_fields(given: Mapping[str, Any], what: str = "search") -> dict[str, Any]:
    """The `QueryOptions` fields a call gives (None: not given), checked; `filters` may be
    ``key=value`` strings (one string is one filter) or a mapping of key -> value(s).

    Raises:
        UsageError: an unknown field, a value of the wrong type, or a malformed filter.
    """
    from ragcli.choices import plain_value
    from ragcli.retrieval.filters import parse_filters
    from ragcli.retrieval.search import QueryOptions

    plain = {name: plain_value(value) for name, value in given.items()}
    values = checked(plain, field_types(QueryOptions), what)
    if "filters" in values:
        written = values["filters"]
        command_line = isinstance(written, CommandLineFilters)
        values["filters"] = parse_filters(filter_pairs(written) or (), command_line=command_line)
    return values


def ask_fields(given: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the `QueryOptions` fields, the checked `AskOptions` fields) an ask call gives.

    Raises:
        UsageError: an unknown field or a value of the wrong type.
    """
    from ragcli.answer.options import AskOptions
    from ragcli.choices import plain_value
    from ragcli.retrieval.search import QueryOptions

    query_hints = field_types(QueryOptions)
    ask_hints = {name: hint for name, hint in field_types(AskOptions).items() if name != "query"}
    check_names(given, {**ask_hints, **query_hints, "doc": str}, "ask")
    retrieval = {name: value for name, value in given.items() if name in query_hints}
    rest = {name: plain_value(value) for name, value in given.items() if name not in query_hints}
    return retrieval, checked(rest, ask_hints, "ask")


def checked_queries(queries: Any) -> Any:
    """`queries` if it is a list (or other sequence) of strings.

    Raises:
        UsageError: one string (a list of its letters would be searched) or a non-string item.
    """
    if isinstance(queries, str):
        raise UsageError("queries must be a list of strings, not one string: use search() for one query")
    for number, query in enumerate(_sequence("queries", queries)):
        checked_text(query, f"queries[{number}]")
    return queries


class CommandLineFilters(tuple):
    """`--filter` values as the command line gave them: an error about one names it
    `--filter 'key=value'`; elsewhere filters are named as JSON writes them."""


def filter_pairs(filters: JsonFilters, *, numbers: bool = True) -> list[str | tuple[str, str]] | None:
    """The filters as written, for `ragcli.retrieval.filters.parse_filters`: ``key=value``
    strings stay as they are (one string is one pair); a mapping
    (`{"file_type": ["pdf", "md"], "modified": ">=2024-01-01"}`) gives a (key, value) pair for
    each of its values; None stays None.

    Args:
        numbers: take a number as a value (the Python API); the JSON front ends take strings.

    Raises:
        UsageError: a key with an empty list of values (it would filter nothing out), or a
            value that is not a string (or a number, where taken).
    """
    if filters is None:
        return None
    if isinstance(filters, str):
        return [filters]
    if not isinstance(filters, Mapping):
        if not hasattr(filters, "__iter__"):
            raise UsageError(f"filters must be key=value strings or a mapping, not {filters!r}")
        return [_filter_text(f"filters[{number}]", pair, False) for number, pair in enumerate(filters)]
    pairs: list[str | tuple[str, str]] = []
    for key, value in filters.items():
        values = list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]
        if not values:
            raise UsageError(f"filters.{key}: give at least one value, or leave {key} out")
        pairs.extend((str(key), _filter_text(f"filters.{key}", item, numbers)) for item in values)
    return pairs


def _filter_text(name: str, value: Any, numbers: bool) -> str:
    """`value` as a filter's text.

    Raises:
        UsageError: it is not a string (or a number, when `numbers`); the message shows it as
            JSON writes it, since the JSON front ends pass it on as it came.
    """
    kinds = (str, int, float) if numbers else (str,)
    if isinstance(value, bool) or not isinstance(value, kinds):
        import json

        try:
            shown = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            shown = repr(value)
        example = '"file_type=pdf"' if name.startswith("filters[") else '"pdf"'
        raise UsageError(f"{name}: {shown} is not a filter value; write a string, e.g. {example}")
    return str(value)
