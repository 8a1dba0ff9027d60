"""`import codeqa`: the library's public names, one version, and an import that costs nothing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import codeqa
from conftest import ROOT


@pytest.mark.unit
@pytest.mark.parametrize("name", sorted(set(codeqa.__all__) - {"__version__"}))
def test_every_public_name_resolves_to_the_module_that_defines_it(name):
    value = getattr(codeqa, name)
    assert value.__module__ == codeqa._PUBLIC[name]


@pytest.mark.unit
def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Retreiver'"):
        codeqa.Retreiver  # noqa: B018


@pytest.mark.unit
def test_import_codeqa_loads_no_dependency():
    """The command and the library start instantly: names are imported on first use."""
    loaded = subprocess.run([sys.executable, "-c", "import codeqa, json, sys; print(json.dumps(sorted(sys.modules)))"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout
    modules = json.loads(loaded)
    assert [m for m in modules if m.startswith("codeqa")] == ["codeqa"]
    assert not {"lancedb", "numpy", "onnxruntime", "flask", "openai"} & set(modules)


@pytest.mark.unit
def test_the_version_is_defined_once():
    """pyproject.toml reads it from the package; nothing else spells it."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'version = { attr = "codeqa.__version__" }' in pyproject and codeqa.__version__ not in pyproject
