"""Settings precedence, one test per layer, and the config file's errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ragcli.cli import app
from ragcli.config import default_config_path, load_settings, set_config_value
from ragcli.errors import UsageError


def test_default_layer(isolated_home, monkeypatch):
    monkeypatch.delenv("RAG_INDEX")
    settings = load_settings()
    assert settings.get("top_k") == 10 and settings.sources["top_k"] == "default"
    assert settings.index.name == "default" and settings.sources["index"] == "default"


def test_config_file_beats_default(isolated_home):
    set_config_value(default_config_path(), "top_k", "5")
    settings = load_settings()
    assert settings.get("top_k") == 5 and settings.sources["top_k"].startswith("config:")


def test_environment_beats_config_file(isolated_home, monkeypatch):
    set_config_value(default_config_path(), "top_k", "5")
    monkeypatch.setenv("RAG_TOP_K", "7")
    settings = load_settings()
    assert settings.get("top_k") == 7 and settings.sources["top_k"] == "env:RAG_TOP_K"


def test_flag_beats_environment(isolated_home, monkeypatch, tmp_path):
    monkeypatch.setenv("RAG_TOP_K", "7")
    settings = load_settings(top_k=3, index=tmp_path / "flagged")
    assert settings.get("top_k") == 3 and settings.sources["top_k"] == "flag"
    assert settings.index == tmp_path / "flagged"


def test_model_setting_feeds_gguf_model(isolated_home, monkeypatch):
    monkeypatch.setenv("RAG_MODEL", "/models/other.gguf")
    assert load_settings().gguf_model == "/models/other.gguf"


def test_unknown_key_in_file_names_file_and_key(isolated_home):
    path = default_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('colour = "never"\n')
    with pytest.raises(UsageError, match=r"config.toml: unknown key 'colour'"):
        load_settings()


def test_bad_value_in_file_names_file_and_key(isolated_home):
    path = default_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('mode = "telepathy"\n')
    with pytest.raises(UsageError, match=r"config.toml: bad value 'telepathy' for mode"):
        load_settings()


def test_cli_config_set_show_path(isolated_home):
    runner = CliRunner()
    assert runner.invoke(app, ["config", "path"]).stdout.strip() == str(default_config_path())
    assert runner.invoke(app, ["config", "set", "mode", "bm25"]).exit_code == 0
    shown = json.loads(runner.invoke(app, ["config", "show", "--json"]).stdout)
    mode = next(row for row in shown["settings"] if row["key"] == "mode")
    assert mode["value"] == "bm25" and mode["source"].startswith("config:")
    bad = runner.invoke(app, ["config", "set", "nonsense", "1"])
    assert bad.exit_code == 2 and "unknown setting 'nonsense'" in bad.stderr
