"""A search or an ask call from a front end that takes JSON (the MCP tools, `rag serve`'s API)
turned into the `Index`'s options, one way for all of them.

The call's parameters come by their `QueryOptions` / `AskOptions` field name, None meaning "not
given" (the `Index` resolves it from the settings, as for the CLI); `filters` may be the CLI's
``key=value`` pairs or a JSON object of key -> value or list of values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ragcli.arguments import JsonFilters, filter_pairs
from ragcli.errors import UsageError

if TYPE_CHECKING:
    from ragcli.answer.options import AskOptions
    from ragcli.index import Index
    from ragcli.retrieval.search import QueryOptions

__all__ = [
    "JsonFilters",
    "argument_problems",
    "ask_options",
    "checked_json_filters",
    "filter_pairs",
    "query_options",
]


def query_options(index: Index, given: Mapping[str, Any]) -> QueryOptions:
    """The search options of a call's parameters (see the module docstring)."""
    return index.query_options(**given)


def ask_options(index: Index, given: Mapping[str, Any]) -> AskOptions:
    """The answer options (retrieval ones included) of a call's parameters."""
    return index.ask_options(**given)


def argument_problems(error: Any, whole: str) -> str:
    """A call's arguments that do not fit its schema (a pydantic `ValidationError`), as one line:
    `top_k: Input should be less than or equal to 100; ...`; `whole` names the call as a whole,
    for a problem with no field (an argument missing from a body that is not an object)."""
    return "; ".join(_problem(item, whole) for item in error.errors())


def _problem(item: Mapping[str, Any], whole: str) -> str:
    """One problem of a `ValidationError`: `field: message`, or the message alone where it
    names its field itself (`filters.modified: ...`, from `checked_json_filters`)."""
    where, message = ".".join(map(str, item["loc"])) or whole, item["msg"]
    return message if message.startswith((f"{where}:", f"{where}.", f"{where}[")) else f"{where}: {message}"


def checked_json_filters(filters: Any) -> Any:
    """A JSON call's `filters` object or list as it came, checked before its schema's types
    (a pydantic `BeforeValidator` of the MCP tools and `rag serve`'s bodies): a value that is
    not a string, or a key with an empty list of values, is named as the caller wrote it
    (`filters.file_type: true is not a filter value; ...`) rather than by the union's types.

    Raises:
        PydanticCustomError: the one-line message of `filter_pairs`.
    """
    if isinstance(filters, (dict, list)):
        from pydantic_core import PydanticCustomError

        try:
            filter_pairs(filters, numbers=False)
        except UsageError as error:
            raise PydanticCustomError("filters", str(error)) from None
    return filters
