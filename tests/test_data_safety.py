"""Data safety through the real `rag`: nothing of the user's deleted, nothing removed unasked,
no raw terminal codes, one clear line for bad input."""

from __future__ import annotations

import json

from runner import rag


def _docs(tmp_path, **files: str):
    folder = tmp_path / "docs"
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _listed(index) -> set[str]:
    result = rag("ls", "--index", str(index), "--json")
    assert result.returncode == 0, result.stderr
    return {doc["path"].rsplit("/", 1)[-1] for doc in json.loads(result.stdout)["documents"]}


# --- --rebuild never deletes a file rag did not write --------------------------------------


def test_indexing_a_folder_into_itself_is_refused(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "n1.txt").write_text("my own note", encoding="utf-8")
    result = rag("ingest", "--index", str(notes), str(notes))
    assert result.returncode != 0
    assert "outside the documents" in result.stderr and "Traceback" not in result.stderr
    assert (notes / "n1.txt").read_text(encoding="utf-8") == "my own note"
    assert sorted(p.name for p in notes.iterdir()) == ["n1.txt"]


def test_rebuild_keeps_user_files_kept_inside_the_index_folder(tmp_path):
    docs = _docs(tmp_path, **{"a.txt": "apples are red", "b.txt": "bananas are yellow"})
    index = tmp_path / "idx"
    assert rag("ingest", "--index", str(index), str(docs)).returncode == 0
    (index / "n1.txt").write_text("a note I keep here", encoding="utf-8")
    result = rag("ingest", "--rebuild", "--index", str(index), str(docs))
    assert result.returncode == 1
    assert "n1.txt" in result.stderr and "nothing was changed" in result.stderr
    assert (index / "n1.txt").read_text(encoding="utf-8") == "a note I keep here"
    assert _listed(index) == {"a.txt", "b.txt"}


def test_an_index_folder_inside_the_documents_is_not_read_as_documents(tmp_path):
    docs = _docs(tmp_path, **{"a.txt": "apples are red"})
    index = docs / "index"
    assert rag("ingest", "--index", str(index), str(docs)).returncode == 0
    (index / "n1.txt").write_text("a note kept in the index folder", encoding="utf-8")
    assert rag("ingest", "--index", str(index), str(docs)).returncode == 0
    assert _listed(index) == {"a.txt"}


def test_rebuild_does_not_bring_back_removed_documents(tmp_path):
    docs = _docs(tmp_path, **{"a.txt": "apples are red", "b.txt": "bananas are yellow"})
    index = tmp_path / "idx"
    assert rag("ingest", "--index", str(index), str(docs)).returncode == 0
    assert rag("rm", "--index", str(index), str(docs / "b.txt")).returncode == 0
    assert rag("ingest", "--rebuild", "--index", str(index), str(docs)).returncode == 0
    assert _listed(index) == {"a.txt"}
    assert rag("ingest", "--index", str(index)).returncode == 0
    assert _listed(index) == {"a.txt"}


def test_an_empty_path_removes_nothing_and_ingests_nothing(tmp_path, monkeypatch):
    """`rag rm "$(...)"` whose substitution printed nothing removed everything under the current
    folder, for good; `rag ingest ""` read the current folder."""
    docs = _docs(tmp_path, **{"a.txt": "apples are red", "b.txt": "bananas are yellow"})
    index = tmp_path / "idx"
    assert rag("ingest", "--index", str(index), str(docs)).returncode == 0
    monkeypatch.chdir(docs)  # where an empty path would point
    removed = rag("rm", "--index", str(index), "")
    ingested = rag("ingest", "--index", str(index), "", str(docs))
    assert removed.returncode == 2 and "a path to remove is empty" in removed.stderr
    assert ingested.returncode == 2 and "a path to ingest is empty" in ingested.stderr
    assert _listed(index) == {"a.txt", "b.txt"}


# --- --include / --exclude never prune documents whose files exist ----------------------------


def test_a_narrower_include_keeps_documents_whose_files_exist(tmp_path):
    docs = _docs(tmp_path, **{f"n{i}.txt": f"note number {i}" for i in range(5)})
    index = tmp_path / "idx"
    assert rag("ingest", "--index", str(index), str(docs)).returncode == 0
    result = rag("ingest", "--index", str(index), str(docs), "--include", "*.mdd", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["removed"] == 0
    assert "kept 5 indexed document(s)" in result.stderr and "rag rm" in result.stderr
    assert _listed(index) == {f"n{i}.txt" for i in range(5)}
    (docs / "n0.txt").unlink()  # a file gone from disk is still pruned, globs or not
    result = rag("ingest", "--index", str(index), str(docs), "--exclude", "n1.txt", "--json")
    assert json.loads(result.stdout)["removed"] == 1
    assert _listed(index) == {f"n{i}.txt" for i in range(1, 5)}


# --- document text on a terminal: escape sequences neutralised; in a pipe: exact ----------------

HOSTILE = (
    "The lighthouse keeper is Ada Lovelace.\x1b]0;pwned\x07 She lit the lamp\x1b[2J every night."
    " \x1b]8;;http://evil.example\x1b\\Click\x1b]8;;\x1b\\ here.\n"
)


def _on_terminal(*args: str) -> str:
    """stdout of `rag ARGS` when it is a terminal (a pseudo-terminal), as raw text."""
    import os
    import pty
    import subprocess
    import sys

    master, slave = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "ragcli", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "120"},
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    child.wait(timeout=600)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


def _raw_sequences(text: str) -> list[str]:
    return [seq for seq in ("\x1b]", "\x1b[2J", "\x07", "\x1b\\") if seq in text]


def test_document_text_is_neutralised_on_a_terminal_and_exact_in_a_pipe(tmp_path):
    docs = _docs(tmp_path, **{"esc.txt": HOSTILE})
    index = tmp_path / "idx"
    assert rag("ingest", "--index", str(index), str(docs)).returncode == 0
    shown = _on_terminal("get", "--index", str(index), str(docs / "esc.txt"))
    assert "Ada Lovelace." in shown and "She lit the lamp every night" in shown
    assert _raw_sequences(shown) == []
    asked = _on_terminal(
        "ask", "--index", str(index), "--answer-style", "evidence", "who is the lighthouse keeper?"
    )
    assert "Ada Lovelace" in asked and _raw_sequences(asked) == []
    queried = _on_terminal("query", "--index", str(index), "lighthouse keeper")
    assert "lighthouse" in queried and _raw_sequences(queried) == []
    # In a pipe the text is data: exactly what the document holds.
    piped = rag("get", "--index", str(index), str(docs / "esc.txt"))
    assert piped.returncode == 0 and piped.stdout == HOSTILE


# --- a read-only index, an index from a newer rag ---------------------------------------------


def _read_only_mount_works(folder) -> bool:
    import shutil
    import subprocess

    if shutil.which("unshare") is None:
        return False
    probe = f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder}"
    return subprocess.run(["unshare", "-m", "sh", "-c", probe], capture_output=True).returncode == 0


def test_a_read_only_index_gets_advice_that_keeps_it(tmp_path):
    import os
    import shlex
    import subprocess
    import sys

    import pytest

    docs = _docs(tmp_path, **{"a.txt": "the lighthouse keeper"})
    index = tmp_path / "idx"
    assert rag("ingest", "--index", str(index), str(docs)).returncode == 0
    if not _read_only_mount_works(index):
        pytest.skip("needs a read-only bind mount (unshare -m as root)")
    ro = shlex.quote(str(index))
    command = " ".join(
        [f"mount --bind {ro} {ro} && mount -o remount,bind,ro {ro} &&"]
        + [shlex.quote(part) for part in (sys.executable, "-m", "ragcli", "query", "--mode", "bm25")]
        + ["--index", ro, "lighthouse"]
    )
    result = subprocess.run(
        ["unshare", "-m", "sh", "-c", command], capture_output=True, text=True, env={**os.environ}
    )
    assert result.returncode == 1
    assert "read-only" in result.stderr and "move it away" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_an_index_from_a_newer_rag_is_refused_with_one_line(tmp_path):
    docs = _docs(tmp_path, **{"a.txt": "the lighthouse keeper"})
    index = tmp_path / "idx"
    assert rag("ingest", "--index", str(index), str(docs)).returncode == 0
    (index / "ragcli-index.json").write_text('{"format": "ragcli-index", "version": 99}', encoding="utf-8")
    before = (index / "index.db").read_bytes()
    for args in (
        ("query", "--mode", "bm25", "lighthouse"),
        ("ingest", str(docs)),
        ("ingest", "--rebuild", str(docs)),
    ):
        result = rag(*args, "--index", str(index))
        assert result.returncode == 1, args
        assert "newer rag" in result.stderr and "format 99" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert (index / "index.db").read_bytes() == before


def test_an_index_migrated_by_a_newer_rag_is_refused(tmp_path):
    import sqlite3

    docs = _docs(tmp_path, **{"a.txt": "the lighthouse keeper"})
    index = tmp_path / "idx"
    assert rag("ingest", "--index", str(index), str(docs)).returncode == 0
    with sqlite3.connect(index / "index.db") as conn:
        conn.execute(
            "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
            "VALUES ('ragcli', 'm999_from_the_future', '2030-01-01')"
        )
    result = rag("query", "--mode", "bm25", "lighthouse", "--index", str(index))
    assert result.returncode == 1 and "newer rag" in result.stderr


# --- rag mcp: a reply to every request, a bounded query, Ctrl-C ---------------------------------


class _RawMcp:
    """`rag mcp` spoken to line by line, as a client that sends what it likes."""

    def __init__(self, index) -> None:
        import os
        import subprocess
        import sys

        self.process = subprocess.Popen(
            [sys.executable, "-m", "ragcli", "mcp", "--index", str(index)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ},
        )
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "probe", "version": "1"},
                },
            }
        )
        assert self.reply()["id"] == 1
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        self.process.stdin.write(line.encode("utf-8") + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict:
        import select

        ready, _, _ = select.select([self.process.stdout], [], [], 120)  # a safety net, not a timing check
        assert ready, "no reply from rag mcp"
        return json.loads(self.process.stdout.readline())


def test_mcp_answers_what_it_cannot_parse_and_survives_a_huge_query(tmp_path):
    docs = _docs(tmp_path, **{"a.txt": "the lighthouse keeper is Ada"})
    index = tmp_path / "idx"
    assert rag("ingest", "--index", str(index), str(docs)).returncode == 0
    server = _RawMcp(index)
    try:
        server.send("{not json")
        answer = server.reply()
        assert answer["id"] is None and answer["error"]["code"] == -32700
        server.send('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": "oops"}')
        answer = server.reply()
        assert answer["id"] == 7 and answer["error"]["code"] == -32600
        huge = "lighthouse " * 2_000_000  # 22 MB of query text
        call = {"name": "search", "arguments": {"query": huge, "mode": "bm25"}}
        server.send({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": call})
        answer = server.reply()
        assert answer["id"] == 8 and answer["result"]["isError"]
        assert "limit is" in answer["result"]["content"][0]["text"]
        call = {"name": "search", "arguments": {"query": "lighthouse", "mode": "bm25"}}
        server.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": call})
        answer = server.reply()
        assert answer["id"] == 9 and not answer["result"].get("isError")
    finally:
        server.process.kill()
        server.process.wait()


def test_mcp_exits_on_ctrl_c(tmp_path):
    import signal
    import subprocess

    docs = _docs(tmp_path, **{"a.txt": "the lighthouse keeper is Ada"})
    index = tmp_path / "idx"
    assert rag("ingest", "--index", str(index), str(docs)).returncode == 0
    server = _RawMcp(index)
    server.process.send_signal(signal.SIGINT)
    try:
        code = server.process.wait(timeout=60)  # a safety net: the old server never exited
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()
        code = None
    assert code == 130


# --- file names that are not UTF-8; absurd chunk ids -------------------------------------------

BAD_NAME = "bad_\udcff.txt"  # the byte 0xff, as Python holds a name that is not UTF-8


def _bad_name_docs(tmp_path):
    docs = _docs(tmp_path, **{"good.txt": "a good note about tides"})
    (docs / BAD_NAME).write_bytes(b"a note about kites with a strange name")
    return docs


def test_get_open_and_rm_take_a_name_that_is_not_utf8(tmp_path):
    docs = _bad_name_docs(tmp_path)
    index = tmp_path / "idx"
    assert rag("ingest", "--index", str(index), str(docs)).returncode == 0
    got = rag("get", "--index", str(index), str(docs / BAD_NAME))
    assert got.returncode == 0, got.stderr
    assert "kites" in got.stdout
    opened = rag("open", "--index", str(index), str(docs / BAD_NAME))
    assert opened.returncode == 0 and "Traceback" not in opened.stderr
    removed = rag("rm", "--index", str(index), str(docs / BAD_NAME))
    assert removed.returncode == 0, removed.stderr
    assert _listed(index) == {"good.txt"}
    assert rag("ingest", "--index", str(index)).returncode == 0  # the removal lasts
    assert rag("ingest", "--index", str(index), str(docs)).returncode == 0
    assert _listed(index) == {"good.txt"}


def test_a_chunk_id_past_any_integer_is_one_line(tmp_path):
    docs = _docs(tmp_path, **{"a.txt": "the lighthouse keeper"})
    index = tmp_path / "idx"
    assert rag("ingest", "--index", str(index), str(docs)).returncode == 0
    result = rag("get", "--index", str(index), "--chunk", str(10**23))
    assert result.returncode == 1
    assert result.stderr.startswith("rag: error: no chunk") and len(result.stderr.splitlines()) == 1


def test_watch_goes_on_after_a_name_that_is_not_utf8(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    docs = _docs(tmp_path, **{"good.txt": "a good note about tides"})
    index = tmp_path / "idx"
    watcher = subprocess.Popen(
        [sys.executable, "-m", "ragcli", "ingest", str(docs), "--index", str(index), "--watch"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        deadline = time.monotonic() + 300  # a safety net for a watcher that died, not a timing check
        while "good.txt" not in (_listed(index) if (index / "index.db").exists() else set()):
            assert time.monotonic() < deadline and watcher.poll() is None
            time.sleep(0.5)
        (docs / BAD_NAME).write_bytes(b"a note about kites with a strange name")
        time.sleep(1)
        (docs / "later.txt").write_text("a later note about harbours", encoding="utf-8")
        # The notifier may report later.txt before it gives up on the undecodable name: wait for
        # both (the catch-up ingest adds the odd name), never asserting between the two.
        wanted = {"later.txt", BAD_NAME.replace("\udcff", "\\xff")}
        while not wanted <= _listed(index):
            assert time.monotonic() < deadline and watcher.poll() is None, "the watcher stopped"
            time.sleep(0.5)
    finally:
        watcher.send_signal(signal.SIGINT)
        _, stderr = watcher.communicate(timeout=120)
    assert "Traceback" not in stderr and "Error" not in stderr


# --- Milvus Lite: no ghost chunks, a damaged manifest is loud, a huge chunk fits --------------


def _half_written(index, store: str, path) -> None:
    """Leave the store as a kill inside a large document does: its first chunks written, the
    document's row (the mark that it is complete) not."""
    import numpy as np
    from milvus_lite.server_manager import server_manager_instance

    from ragcli.store.interface import DocumentPiece, PieceChunk
    from ragcli.store.chooser import open_backend

    backend = open_backend(index)
    try:
        dimension = int(backend.get_meta("embedding_dimension"))
        record = {"path": str(path), "file_type": "txt", "content_hash": "h", "file_name": path.name}
        record |= {"size": 9, "modified": None, "created": None, "title": None, "metadata": {}}
        chunks = [PieceChunk(i, f"zeppelin ghost part {i}", 0, 9, None, f"ghost{i}") for i in range(3)]
        vectors = {chunk.hash: np.full(dimension, 0.1, dtype=np.float32) for chunk in chunks}
        backend.write([DocumentPiece(record, "medium", "h", chunks, first=True, last=False)], vectors)
    finally:
        backend.close()
        server_manager_instance.release_server(store)


def _zeppelin_hits(index) -> list[str]:
    result = rag("query", "--index", str(index), "--mode", "bm25", "zeppelin", "--json")
    assert result.returncode == 0, result.stderr
    return [hit["path"] for hit in json.loads(result.stdout)["hits"]]


def test_milvus_chunks_of_an_interrupted_document_are_swept_and_seen(tmp_path):
    import pytest

    pytest.importorskip("milvus_lite")
    texts = {"a.txt": "the lighthouse keeper", "big.txt": "zeppelin", "other.txt": "zeppelin"}
    docs = _docs(tmp_path, **texts)
    index, store = tmp_path / "idx", str(tmp_path / "milvus.db")
    assert rag("ingest", "--index", str(index), "--store", store, str(docs / "a.txt")).returncode == 0
    _half_written(index, store, docs / "big.txt")
    _half_written(index, store, docs / "other.txt")
    doctor = rag("doctor", "--index", str(index))
    assert "half-written" in doctor.stdout + doctor.stderr
    removed = rag("rm", "--index", str(index), str(docs / "other.txt"))
    assert removed.returncode == 0, removed.stderr
    (docs / "big.txt").unlink()  # deleted before the ingest resumes
    assert rag("ingest", "--index", str(index), str(docs / "a.txt")).returncode == 0
    assert _zeppelin_hits(index) == []
    doctor = rag("doctor", "--index", str(index))
    assert "half-written" not in doctor.stdout + doctor.stderr


def test_milvus_damaged_manifest_is_loud_and_a_huge_chunk_fits(tmp_path):
    import pytest

    pytest.importorskip("milvus_lite")
    blob = "x" * 70_000 + " tail words"
    docs = _docs(tmp_path, **{"a.txt": "the lighthouse keeper", "blob.txt": blob})
    index, store = tmp_path / "idx", tmp_path / "milvus.db"
    result = rag("ingest", "--index", str(index), "--store", str(store), str(docs))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert rag("get", "--index", str(index), str(docs / "blob.txt")).stdout.strip() == blob
    (store / "collections" / "ragcli_chunks" / "manifest.json").write_text("{damaged", encoding="utf-8")
    for args in (("ingest", str(docs)), ("query", "--mode", "bm25", "lighthouse")):
        result = rag(*args, "--index", str(index))
        assert result.returncode == 1, result.stdout
        assert "manifest.json is unreadable" in result.stderr and len(result.stderr.splitlines()) == 1


def test_mcp_survives_its_worker_being_killed(tmp_path):
    import os
    import signal
    from pathlib import Path

    docs = _docs(tmp_path, **{"a.txt": "the lighthouse keeper is Ada"})
    index = tmp_path / "idx"
    assert rag("ingest", "--index", str(index), str(docs)).returncode == 0
    server = _RawMcp(index)
    try:
        children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children").read_text().split()
        assert children, "rag mcp runs its index worker in a child process"
        os.kill(int(children[0]), signal.SIGKILL)  # as the kernel's OOM killer would
        call = {"name": "search", "arguments": {"query": "lighthouse", "mode": "bm25"}}
        answers = []
        for request_id in (10, 11):
            server.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": call})
            answers.append(server.reply())
        assert answers[0]["id"] == 10 and answers[0]["result"]["isError"]
        assert answers[1]["id"] == 11 and not answers[1]["result"].get("isError")
        assert "lighthouse" in answers[1]["result"]["content"][0]["text"]
    finally:
        server.process.kill()
        server.process.wait()
