"""trawl's MCP front: the stdio bridge and the tools served at /mcp."""
