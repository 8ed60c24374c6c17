"""What `rag status` and `rag doctor` show of an index on Milvus: counts, sizes and the
health checks (a mixin of `ragcli.store.milvus.backend.MilvusBackend`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragcli.store.directory import DATABASE_NAME, directory_size, integrity
from ragcli.store.milvus.schema import CHUNKS, DOCUMENTS, check_collections


class MilvusHealth:
    """Status and doctor checks; they use the backend's client, uri, store and reads."""

    def counts(self) -> dict[str, int]:
        chunks = self._count(CHUNKS)
        return {"documents": self._count(DOCUMENTS), "chunks": chunks, "embeddings": chunks}

    def describe(self) -> dict[str, Any]:
        groups = {
            name: {
                "vectors": self.chunk_count(name),
                "vectors_current": True,
                "vector_search": {"type": "exact"},
                "embedded_chunks": self.chunk_count(name),
                "embedded_share": 1.0,
            }
            for name in self.groups()
        }
        lite = Path(self.uri).is_dir() if self.uri.endswith(".db") else False
        return {
            "groups": groups,
            "sizes": {
                "database": directory_size(self.path / DATABASE_NAME),
                "vectors": directory_size(Path(self.uri)) if lite else 0,
            },
        }

    def health_checks(self) -> list[tuple[str, Any, str]]:
        return [
            (
                "milvus connection",
                self._ping,
                f"start the Milvus server at {self.uri}, or check $MILVUS_TOKEN",
            ),
            (
                "milvus collections",
                lambda: check_collections(self.client, int(self.get_meta("embedding_dimension") or 0)),
                f"ingest into a new --store, or drop the ragcli_* collections in {self.uri} and ingest again",
            ),
            (
                "unfinished documents",
                self._unfinished_check,
                "run `rag ingest` to finish them (or sweep the chunks of files since deleted), "
                "or `rag rm PATH` to drop them",
            ),
            (
                "sqlite integrity",
                lambda: integrity(self.store),
                "rebuild the index folder: rag ingest",
            ),
        ]

    def _unfinished_check(self) -> str:
        """Chunks an interrupted ingest wrote for documents no later run finished."""
        unfinished = sorted(self._unfinished())
        if unfinished:
            more = f" and {len(unfinished) - 3} more" if len(unfinished) > 3 else ""
            raise RuntimeError(
                f"{len(unfinished)} half-written document(s) from an interrupted ingest: "
                + ", ".join(unfinished[:3])
                + more
            )
        return "every document's chunks are complete"

    def _ping(self) -> str:
        version = self.client.get_server_version()
        return f"{self.uri} answers (server {version})"
