"""The ingest progress bar: totals counted before each phase, never guessed; ETA once stable."""

from __future__ import annotations

import io

from rich.console import Console
from rich.progress import Progress

from ragcli.cli.progress import STABLE_SECONDS, BarProgress, stable_eta
from ragcli.ingest.pipeline import ingest


def receiver() -> tuple[BarProgress, Progress]:
    console = Console(file=io.StringIO(), force_terminal=True, width=160)
    progress = Progress(console=console, auto_refresh=False)
    return BarProgress(progress, "reading", unit="files"), progress


def test_reading_counts_bytes_of_a_total_known_first_then_embedding_counts_chunks():
    bar, progress = receiver()
    task = progress.tasks[0]
    bar.start(3)
    bar.start_bytes(300)
    for size in (100, 150):
        bar.advance("/x/a.txt", "added")
        bar.read_bytes(size)
        assert task.total == 300  # the total never moves while reading
    assert task.completed == 250 and task.fields["count"] == "2/3 files"
    bar.embedding_started(40)
    assert task.total == 40 and task.completed == 0 and task.description == "embedding"
    bar.embedded(10)
    assert task.completed == 10 and task.fields["count"] == "10/40 chunks" and task.total == 40


def test_the_eta_waits_until_the_rate_means_something():
    assert stable_eta(1, 100, 60) == "-"  # 1% done: too early
    assert stable_eta(50, 100, STABLE_SECONDS / 2) == "-"  # too soon
    assert stable_eta(50, 100, 10) == "0:00:10"
    assert stable_eta(0, 0, 10) == "-"


class Recorder:
    """A progress receiver that keeps every call, as the CLI's bar gets them."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __getattr__(self, name):
        return lambda *args: self.calls.append((name, *args))


def test_an_ingest_announces_files_bytes_and_chunks_before_each_phase(tmp_path, isolated_home, fake_embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    for number in range(4):
        (docs / f"n{number}.txt").write_text(f"Note {number} about rivers. " * 20)
    recorder = Recorder()
    ingest(isolated_home, [docs], embedder=fake_embedder, progress=recorder)
    names = [call[0] for call in recorder.calls]
    assert recorder.calls[0] == ("start", 4)
    assert recorder.calls[1] == ("start_bytes", sum(p.stat().st_size for p in docs.iterdir()))
    assert names.index("embedding_started") > max(i for i, n in enumerate(names) if n == "read_bytes")
    total = next(call[1] for call in recorder.calls if call[0] == "embedding_started")
    assert sum(call[1] for call in recorder.calls if call[0] == "embedded") == total > 0
