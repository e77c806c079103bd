#!/bin/sh
# Register trawl with Claude Code (user scope: every project). trawl-mcp must be on PATH;
# otherwise give its full path, e.g. ~/src/trawl/.venv/bin/trawl-mcp.
claude mcp add --scope user trawl -- trawl-mcp

# Settings that are not the defaults (port, state_dir, file_roots, ...) go in ~/.config/trawl/config.toml: the
# daemon, trawl-mcp and the CLI all read it, whatever environment the client gives trawl-mcp.
# A second trawl on another port / state directory (rarely needed):
# claude mcp add trawl-test --env TRAWL_PORT=8766 --env TRAWL_STATE_DIR=/tmp/trawl-test -- trawl-mcp
