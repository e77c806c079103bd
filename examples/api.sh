#!/bin/sh
# The local HTTP API with curl. The daemon must be running (`trawl daemon`, or any trawl-mcp starts it).
STATE="${TRAWL_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/trawl}"
PORT="${TRAWL_PORT:-8765}"
TOKEN="$(cat "$STATE/token")"

curl -s "http://127.0.0.1:$PORT/healthz"; echo
curl -s -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \
     -d '{"url": "https://docs.python.org/3/library/asyncio-task.html", "query": "how do I cancel a task?", "k": 4}' \
     "http://127.0.0.1:$PORT/v1/fetch"
echo
