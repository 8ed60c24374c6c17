"""Both store backends implement the whole `ragcli.store.interface` interface."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ragcli.store.interface import Backend, DenseSearch, LexicalSearch
from ragcli.store.local.backend import LocalBackend, LocalDense, LocalLexical
from ragcli.store.milvus.backend import MilvusBackend
from ragcli.store.milvus.search import MilvusDense, MilvusLexical


def methods(cls) -> set[str]:
    return {name for name, value in vars(cls).items() if not name.startswith("_") and callable(value)}


@pytest.mark.parametrize(
    "protocol, implementations",
    [
        (Backend, (LocalBackend, MilvusBackend)),
        (LexicalSearch, (LocalLexical, MilvusLexical)),
        (DenseSearch, (LocalDense, MilvusDense)),
    ],
)
def test_every_backend_has_every_method_of_the_interface(protocol, implementations):
    for implementation in implementations:
        assert methods(protocol) - set(dir(implementation)) == set(), implementation.__name__


def test_the_milvus_backend_module_imports_no_client_until_it_connects():
    code = "import sys, ragcli.store.milvus.backend; print('pymilvus' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
