"""Evaluation: labelled sets in, metrics per configuration out (`rag eval`).

- `datasets`: BEIR folders, QA JSON Lines files, QA dataset folders.
- `indexes`: the dedicated, reused index a dataset's corpus is ingested into.
- `metrics`: retrieval metrics from ir-measures (trec_eval), SQuAD v1.1 answer metrics.
- `retrieval_eval`: `evaluate_retrieval` / `run_retrieval` -> `RetrievalReport`, TREC run files.
- `answer_eval`: `evaluate_answers` / `run_answers` -> `AnswerReport`.
- `generate`: `generate_qa`, synthetic QA pairs from a corpus with the local model.
"""

from ragcli.evaluation.answer_eval import AnswerReport, answer_configurations, evaluate_answers
from ragcli.evaluation.generate import generate_qa
from ragcli.evaluation.retrieval_eval import RetrievalReport, configurations, evaluate_retrieval

__all__ = [
    "AnswerReport",
    "RetrievalReport",
    "answer_configurations",
    "configurations",
    "evaluate_answers",
    "evaluate_retrieval",
    "generate_qa",
]
