"""Chat: @-commands resolved, context assembled, the answer streamed, the conversation stored.

Imports the layers below it; the faces (CLI, web, MCP) build on it through `codeqa.services`.
"""
