"""Settings are declared once (core/config.py): the environment, `codeqa config` and the README's
table all come from that one list."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from codeqa.core.config import Settings, settings_table
from codeqa.core.errors import ConfigError
from conftest import ROOT

pytestmark = pytest.mark.unit


def test_the_readmes_configuration_table_is_the_declared_settings():
    readme = (ROOT / "README.md").read_text()
    assert settings_table() in readme, "README's configuration table differs from core/config.py: regenerate it"


def test_every_setting_is_read_from_its_variable(monkeypatch, tmp_path):
    """Each declared variable reaches its field (one variable per field, no field without one)."""
    variables = [spec.metadata["env"] for spec in fields(Settings)]
    assert len(variables) == len(set(variables))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CODEQA_WRITE_BATCH", "7")
    monkeypatch.setenv("CODEQA_PORT", "8123")
    monkeypatch.setenv("CODEQA_HOST", "0.0.0.0")
    monkeypatch.setenv("CODEQA_ALLOWED_HOSTS", "A.example, b.example")
    monkeypatch.setenv("CODEQA_RERANK", "yes")
    monkeypatch.setenv("CODEQA_DATA_DIR", str(tmp_path / "data"))
    settings = Settings.from_env()
    assert (settings.write_batch, settings.port, settings.host) == (7, 8123, "0.0.0.0")
    assert settings.allowed_hosts == ("a.example", "b.example") and settings.rerank is True
    assert settings.database_uri == str(tmp_path / "data" / "lancedb")


def test_a_key_falls_back_to_openai_api_key_and_is_never_shown(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    settings = Settings.from_env()
    assert settings.llm_api_key == settings.embedding_api_key == "sk-secret"
    shown = {env: now for env, now, _, _ in settings.described()}
    assert shown["CODEQA_LLM_API_KEY"] == "(set)" and "sk-secret" not in repr(settings.described())


@pytest.mark.parametrize(("variable", "value", "says"), [
    ("CODEQA_WRITE_BATCH", "0", "at least 1"),
    ("CODEQA_PORT", "http", "a port"),
    ("CODEQA_PLATFORM", "beos", "one of linux"),
    ("CODEQA_BACKGROUND_NICENESS", "40", "0 to 19"),
    ("CODEQA_ALLOWED_ORIGINS", "https://x.example/path", "origins like"),
])
def test_a_bad_value_is_one_clear_error_naming_the_variable(monkeypatch, tmp_path, variable, value, says):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=re.escape(variable) + ".*" + re.escape(says)):
        Settings.from_env()


def test_codeqa_config_lists_every_setting(tmp_path):
    shown = subprocess.run([sys.executable, "-m", "codeqa", "config"], capture_output=True, text=True,
                           cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                              "PYTHONPATH": str(ROOT), "CODEQA_PORT": "8123"})
    assert shown.returncode == 0, shown.stderr
    listed = re.findall(r"^([A-Z_]+)=", shown.stdout, re.M)
    assert listed == [spec.metadata["env"] for spec in fields(Settings)]
    assert "CODEQA_PORT=8123" in shown.stdout and f"CODEQA_DATA_DIR={Path(tmp_path) / '.codeqa'}" in shown.stdout
