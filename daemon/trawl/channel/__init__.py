"""The local clients' channel to the user's daemon, shared by both ends (the daemon that listens, and the CLI
and the stdio bridge that connect): the token and the mutual proof (``token``), who holds a port or a socket
(``peer``), and how a client finds the daemon without handing a secret to anyone else (``discovery``).

Core, not part of any face: the server, the CLI, the browser link and the MCP bridge import it, never each other.
"""
