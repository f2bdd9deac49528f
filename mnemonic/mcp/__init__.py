"""The MCP server: coding agents reach memory through the Model Context Protocol.

One server definition (:func:`mnemonic.mcp.server.build_server`), two transports:

* **streamable HTTP at ``/mcp``**, mounted in the daemon's Starlette app behind the same
  Host, Origin and bearer-token guard as the REST API (``api/security.py``);
* **stdio**, ``mnemonic mcp``: a small process a client starts, which forwards every call
  to the running daemon (``mnemonic.mcp.stdio``). The daemon stays the one writer and
  its indexes the only ones.

Every tool is a thin adapter over the **REST API** (:mod:`mnemonic.mcp.backend`): over a
real socket in stdio mode, and in the daemon over the app itself in-process
(``httpx.ASGITransport``, no socket). Why REST rather than the service layer: the stdio
forwarder has no database and must speak REST anyway, and going through the same routes
inside the daemon means one implementation of every tool for both transports, with the
REST API's validation (bad input is a 4xx, which a tool turns into an ``isError`` result),
redaction and project rules applied once. The in-process hop costs well under a
millisecond; ``bench/mcp.py`` measures the round trips.
"""
