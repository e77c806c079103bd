#!/bin/sh
# The MCP Inspector against trawl. Over stdio (no token needed; trawl-mcp must be on PATH or give its full path):
npx @modelcontextprotocol/inspector --config examples/mcp-stdio.json --server trawl

# Over streamable HTTP to a running daemon: examples/mcp-http.json has the Inspector's "streamable-http" entry.
# In the Inspector's UI choose Authentication -> Bearer Token and paste the token printed by:
#   cat "${TRAWL_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/trawl}/token"
# npx @modelcontextprotocol/inspector --config examples/mcp-http.json --server trawl
