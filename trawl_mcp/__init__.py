"""trawl's stdio MCP bridge (``trawl-mcp``): the MCP tools generated from ``trawl.capabilities``, served over
stdio, each call forwarded to the user's daemon (``client.py``) or answered in-process when none can run."""
