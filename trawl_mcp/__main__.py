"""PLACEHOLDER for the stdio bridge (daemon/MCP issue)."""


def main() -> None:
    raise SystemExit("trawl-mcp: not built yet")
