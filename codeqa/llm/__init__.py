"""LLM: the OpenAI-compatible client, the embedded llama.cpp server and its weights, every prompt.

Below search (HyDE asks the LLM for code) and chat; imports only `codeqa.core`.
"""
