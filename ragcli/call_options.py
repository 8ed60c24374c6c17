"""A search or an ask call from a front end that takes JSON (the MCP tools, `rag serve`'s API)
turned into the `Index`'s options, one way for all of them.

The call's parameters come by their `QueryOptions` / `AskOptions` field name, None meaning "not
given" (the `Index` resolves it from the settings, as for the CLI); `filters` may be the CLI's
``key=value`` pairs or a JSON object of key -> value or list of values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ragcli.arguments import JsonFilters, filter_pairs

if TYPE_CHECKING:
    from ragcli.answer.options import AskOptions
    from ragcli.index import Index
    from ragcli.retrieval.search import QueryOptions

__all__ = ["JsonFilters", "argument_problems", "ask_options", "filter_pairs", "query_options"]


def query_options(index: Index, given: Mapping[str, Any]) -> QueryOptions:
    """The search options of a call's parameters (see the module docstring)."""
    return index.query_options(**_parsed(given))


def ask_options(index: Index, given: Mapping[str, Any]) -> AskOptions:
    """The answer options (retrieval ones included) of a call's parameters."""
    return index.ask_options(**_parsed(given))


def _parsed(given: Mapping[str, Any]) -> dict[str, Any]:
    values = dict(given)
    if "filters" in values:
        values["filters"] = filter_pairs(values["filters"])
    return values


def argument_problems(error: Any, whole: str) -> str:
    """A call's arguments that do not fit its schema (a pydantic `ValidationError`), as one line:
    `top_k: Input should be less than or equal to 100; ...`; `whole` names the call as a whole,
    for a problem with no field (an argument missing from a body that is not an object)."""
    return "; ".join(f"{'.'.join(map(str, item['loc'])) or whole}: {item['msg']}" for item in error.errors())
