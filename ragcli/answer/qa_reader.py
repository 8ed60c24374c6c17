"""A short-line reader backed by a local extractive QA model folder (`--reader PATH`)."""

from __future__ import annotations

from pathlib import Path

from ragcli.errors import ModelNotFound


def load_qa_reader(path: str):
    """The reader of the QA model folder at `path`.

    Raises:
        ModelNotFound: the folder does not exist, or holds no model this build can run.
    """
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise ModelNotFound(f"reader {path}: no such folder (give a BERT QA model folder, or 'builtin')")
    raise ModelNotFound(f"reader {path}: QA model readers are not supported by this build yet")
