"""The JSON bodies `rag serve` accepts, validated by pydantic, and the OpenAPI schema.

Every field but the text defaults to None, meaning "not given": the `Index` then resolves it
as the CLI does (flag > environment > config file > index > default), so a request wins over
all of them. Unknown fields are refused, so a misspelt option is a 422, not silently ignored.
pydantic comes with the MCP SDK (a dependency already) and also writes the JSON schemas the
OpenAPI document at /openapi.json is made of.
"""

# No `from __future__ import annotations`: pydantic reads the annotations at runtime.
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from ragcli import __version__
from ragcli.call_options import checked_json_filters
from ragcli.choices import ANSWER_STYLES, FUSIONS, MAX_EVIDENCE_CHARS, MODES, RERANKERS

MAX_QUERY_TOP_K = 100
MAX_ASK_TOP_K = 50
MAX_TEXT = 10_000
MAX_TOKENS = 4096

Mode = Literal[MODES]  # type: ignore[valid-type]


Filters = Annotated[Union[dict[str, Union[str, list[str]]], list[str]], BeforeValidator(checked_json_filters)]
FILTERS_HELP = (
    'Metadata filters: {"file_type": ["pdf", "md"], "modified": ">=2024-01-01"} (values of one key '
    'OR-ed, keys AND-ed) or the CLI\'s ["file_type=pdf", ...].'
)


class _Body(BaseModel):
    # strict: a JSON API takes JSON types as they are (`true` is not a top_k, nor "3"); NaN and
    # Infinity are not JSON, though Python's parser reads them (a NaN min_score drops every hit).
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


def _words(text: str, hint: str) -> str:
    """`text` unless it is only whitespace, refused as `rag query "  "` and the MCP tools do."""
    if not text.strip():
        raise PydanticCustomError("blank", hint)
    return text


class QueryBody(_Body):
    """POST /query: the options of `rag query`."""

    query: str = Field(min_length=1, max_length=MAX_TEXT, description="Keywords or a question.")
    mode: Optional[Mode] = Field(None, description="bm25, dense, hybrid or llm.")
    top_k: Optional[int] = Field(None, ge=1, le=MAX_QUERY_TOP_K, description="Hits to return.")
    group: Optional[str] = Field(None, max_length=200, description="Chunk group (see /status).")
    filters: Optional[Filters] = Field(None, description=FILTERS_HELP)
    min_score: Optional[float] = Field(None, description="Drop hits scoring below this.")
    rerank: Optional[Literal[RERANKERS]] = Field(None, description="Rerank the hits.")  # type: ignore[valid-type]
    fusion: Optional[Literal[FUSIONS]] = Field(None, description="Hybrid fusion.")  # type: ignore[valid-type]
    require: Optional[list[str]] = Field(None, description="Words every hit must contain.")
    exclude: Optional[list[str]] = Field(None, description="Words no hit may contain.")

    @field_validator("query")
    @classmethod
    def _some_words(cls, query: str) -> str:
        return _words(query, "give some words to search for")


class AskBody(_Body):
    """POST /ask: the options of `rag ask`; `stream` answers with server-sent events."""

    question: str = Field(min_length=1, max_length=MAX_TEXT, description="A question the documents answer.")
    mode: Optional[Mode] = Field(None, description="Retrieval mode.")
    top_k: Optional[int] = Field(None, ge=1, le=MAX_ASK_TOP_K, description="Passages read for the answer.")
    group: Optional[str] = Field(None, max_length=200, description="Chunk group.")
    filters: Optional[Filters] = Field(None, description=FILTERS_HELP)
    answer_style: Optional[Literal[ANSWER_STYLES]] = Field(None, description="How to answer.")  # type: ignore[valid-type]
    max_tokens: Optional[int] = Field(None, ge=1, le=MAX_TOKENS, description="Longest generated answer.")
    evidence_chars: Optional[int] = Field(
        None,
        ge=1,
        le=MAX_EVIDENCE_CHARS,
        description="Most characters of quoted evidence (evidence answers).",
    )
    stream: Optional[bool] = Field(None, description="Server-sent events: token pieces, then the answer.")

    @field_validator("question")
    @classmethod
    def _some_words(cls, question: str) -> str:
        return _words(question, "ask something")


class IngestBody(_Body):
    """POST /ingest (only with --allow-ingest): folders or files under the index's roots."""

    paths: Optional[list[str]] = Field(
        None,
        max_length=100,
        description="Folders/files under the recorded roots; left out or null: all roots.",
    )

    @field_validator("paths")
    @classmethod
    def _some_paths(cls, paths: Optional[list[str]]) -> Optional[list[str]]:
        # An empty list is most likely an empty selection, not a wish to re-read every root.
        if paths == []:
            raise PydanticCustomError(
                "empty", "give at least one path, or leave paths out to re-read every root"
            )
        return paths


# -- OpenAPI --------------------------------------------------------------------------------
_ERROR = {"$ref": "#/components/schemas/Error"}
_JSON_DOC = {"type": "object", "description": "The matching `rag ... --json` document (docs/json.md)."}


def _response(description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema or _JSON_DOC}}}


def _operation(summary: str, body: Optional[str] = None, **extra: Any) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "summary": summary,
        "responses": {"200": _response("OK"), "4XX": _response("Bad request", _ERROR)},
    }
    if body is not None:
        schema = {"$ref": f"#/components/schemas/{body}"}
        operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": schema}}}
    operation.update(extra)
    return operation


def openapi(allow_ingest: bool) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the JSON API (bodies from the models above)."""
    models = [QueryBody, AskBody] + ([IngestBody] if allow_ingest else [])
    schemas = {
        model.__name__: model.model_json_schema(ref_template="#/components/schemas/{model}")
        for model in models
    }
    schemas["Error"] = {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}
    path_id = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
    chunk_id = {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
    page = {"name": "page", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1}}
    paths: dict[str, Any] = {
        "/query": {"post": _operation("Search: `rag query --json`", "QueryBody")},
        "/ask": {
            "post": _operation(
                "Answer with citations: `rag ask --json`; with stream, text/event-stream",
                "AskBody",
                responses={
                    "200": _response("OK"),
                    "4XX": _response("Bad request", _ERROR),
                    "503": _response("The answer queue is full (see Retry-After)", _ERROR),
                },
            )
        },
        "/documents": {"get": _operation("Indexed documents: `rag ls --json`")},
        "/documents/{id}": {
            "get": _operation("A document or one page: `rag get --json`", parameters=[path_id, page])
        },
        "/files/{id}": {"get": _operation("The document's file", parameters=[path_id])},
        "/chunks/{id}": {"get": _operation("One chunk: `rag get --chunk ID --json`", parameters=[chunk_id])},
        "/status": {"get": _operation("What the index holds: `rag status --json`")},
        "/health": {"get": _operation("Liveness and the answer queue")},
    }
    if allow_ingest:
        paths["/ingest"] = {
            "post": _operation("Re-read folders under the roots: `rag ingest --json`", "IngestBody")
        }
    return {
        "openapi": "3.1.0",
        "info": {"title": "ragcli", "version": __version__},
        "paths": paths,
        "components": {"schemas": schemas},
    }
