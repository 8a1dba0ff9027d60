"""Parsing: source text → definitions, references, doc sections and module code.

The language table (`languages.py`) and the tree-sitter queries (`queries/*.scm`) hold all
language knowledge, as data. Imports only `codeqa.core`.
"""
