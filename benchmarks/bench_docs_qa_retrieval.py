"""Gold page in the top 5 hits, per retrieval mode, on a question set with gold pages.

    python benchmarks/bench_docs_qa_retrieval.py DOCS_QA_FOLDER [--index DIR] [--top-k 5]

DOCS_QA_FOLDER holds `corpus/` (the documents) and `qa-tune.jsonl` / `qa-report.jsonl`
(one question a line: `question`, `relevant`: gold paths relative to `corpus/`, best first;
an empty list marks a question the corpus cannot answer, left out here). The corpus is
ingested with the default settings into --index (reused when it exists: an index built
with an older analyzer is re-analysed when opened). Each question runs through the public
API (`open_index(...).search(question, mode=MODE, top_k=5)`), as `rag query -k 5` does; a
question counts when any of its top 5 hits comes from one of its gold pages.

Printed: per half and mode, the share of answerable questions with a gold page in the top
5, and the ids of those without (to read, on the tune half only, never to fit rules to).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

MODES = ("bm25", "dense", "hybrid")
HALVES = ("tune", "report")


def read_questions(path: Path) -> list[dict]:
    """The answerable questions of a QA file (those with gold pages)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row for row in rows if row.get("relevant")]


def gold_in_top(hits, corpus: Path, relevant: list[str]) -> bool:
    """Whether a hit's document is one of the gold paths (relative to the corpus folder)."""
    gold = {(corpus / path).resolve() for path in relevant}
    return any(Path(hit.chunk.path).resolve() in gold for hit in hits)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--index", type=Path, default=Path("/tmp/ragcli-bench-docs-qa"))
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args(argv)

    from ragcli import open_index

    corpus = args.folder / "corpus"
    with open_index(args.index) as index:
        if not (args.index / "index.db").exists():
            print(f"ingesting {corpus} into {args.index} ...", file=sys.stderr)
            index.ingest([corpus])
        for half in HALVES:
            questions = read_questions(args.folder / f"qa-{half}.jsonl")
            for mode in args.modes.split(","):
                missed = [
                    row["_id"]
                    for row in questions
                    if not gold_in_top(
                        index.search(row["question"], mode=mode, top_k=args.top_k), corpus, row["relevant"]
                    )
                ]
                share = 1 - len(missed) / len(questions)
                found = len(questions) - len(missed)
                line = f"{half:6} {mode:6} gold in top {args.top_k}: {share:.3f} ({found}/{len(questions)})"
                print(line + (f"  missed: {' '.join(missed)}" if half == "tune" else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
