"""Core: settings, errors, the records every layer passes around, and process helpers.

Imports nothing else of CodeQA; every other layer may import it.
"""
