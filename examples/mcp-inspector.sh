#!/bin/sh
# The MCP Inspector against trawl. It needs Node.js 22 (`node --version`): under Node 20 npx runs Inspector 0.15.0,
# where the stdio line works but both HTTP forms fail ("spawn undefined ENOENT" with mcp-http.json, "Arguments cannot
# be passed to a URL-based MCP server." with --cli URL --header). The Inspector passes trawl-mcp only HOME, PATH and
# the like: settings that are not the defaults (port, state_dir) go in ~/.config/trawl/config.toml, which the
# daemon, trawl-mcp and the CLI read.
# Over stdio (no token needed; trawl-mcp must be on PATH or give its full path):
npx @modelcontextprotocol/inspector --config examples/mcp-stdio.json --server trawl

# Over streamable HTTP to a running daemon: examples/mcp-http.json has the Inspector's "streamable-http" entry.
# The Inspector sends a config file's headers as written (it does not expand ${TRAWL_TOKEN}), so in its UI choose
# Authentication -> Bearer Token and paste the token printed by:
#   cat "${TRAWL_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/trawl}/token"
# npx @modelcontextprotocol/inspector --config examples/mcp-http.json --server trawl

# The Inspector's command-line mode over streamable HTTP, the token read by the shell (no UI):
# TOKEN="$(cat "${TRAWL_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/trawl}/token")"
# npx @modelcontextprotocol/inspector --cli "http://127.0.0.1:${TRAWL_PORT:-8765}/mcp" --transport http \
#   --header "Authorization: Bearer $TOKEN" --method tools/list
