"""What every tool shares: the backend, the session's project, and the usage record.

``Kit.run`` wraps one tool call: it resolves the project (argument, else the session's),
runs the work, turns a daemon error into a tool error (an ``isError`` result the model can
read and act on, never a protocol failure) and records the call in ``tool_usage``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from mnemonic.mcp.backend import BackendError, DaemonUnavailable, Params, RestBackend
from mnemonic.mcp.session import Sessions, SessionState, client_name

log = logging.getLogger(__name__)

T = TypeVar("T")

MemoryTypeName = Literal["decision", "error", "insight", "learning", "general", "handoff"]
SourceName = Literal[
    "api", "mcp", "terminal", "filesystem", "clipboard", "git", "user", "ingest", "cli", "dreaming"
]
StateName = Literal["active", "fading", "archived", "merged"]


def session_of(ctx: Context[Any, Any] | None) -> Any:
    """The SDK's session object of this request, or None outside a request."""
    if ctx is None:
        return None
    try:
        return ctx.session
    except (ValueError, AttributeError, LookupError):
        return None


class Kit:
    def __init__(self, backend: RestBackend, sessions: Sessions, *, context_limit: int) -> None:
        self.backend = backend
        self.sessions = sessions
        self.context_limit = context_limit

    def state(self, ctx: Context[Any, Any] | None) -> SessionState:
        return self.sessions.state(session_of(ctx))

    async def project(self, ctx: Context[Any, Any] | None, argument: str | None) -> str:
        return await self.sessions.project(session_of(ctx), argument)

    async def call(
        self, method: str, path: str, *, json_body: Any = None, params: Params | None = None
    ) -> Any:
        return await self.backend.request(method, path, json_body=json_body, params=params)

    async def run(
        self,
        ctx: Context[Any, Any] | None,
        tool: str,
        project_arg: str | None,
        work: Callable[[str], Awaitable[T]],
    ) -> T:
        session = session_of(ctx)
        state = self.sessions.state(session)
        if not state.client:
            state.client = client_name(session)
        started = time.perf_counter()
        project, error = "", None
        try:
            project = await self.sessions.project(session, project_arg)
            return await work(project)
        except BackendError as exc:
            error = f"http_{exc.status}"
            raise ToolError(exc.message) from None
        except DaemonUnavailable as exc:
            error = "daemon_down"
            raise ToolError(str(exc)) from None
        except ToolError:
            error = "invalid"
            raise
        except Exception:
            error = "internal"
            raise
        finally:
            latency = (time.perf_counter() - started) * 1000
            await self._record(tool, state.client, project, latency, error)

    async def _record(
        self, tool: str, client: str, project: str, latency_ms: float, error: str | None
    ) -> None:
        """Usage is bookkeeping: failing to record it never fails the call."""
        body = {
            "tool": tool,
            "client": client,
            "project": project,
            "latency_ms": round(latency_ms, 3),
            "ok": error is None,
            "error": error,
        }
        try:
            await self.backend.request("POST", "/api/v1/tool/usage", json_body=body)
        except (BackendError, DaemonUnavailable) as exc:
            log.debug("tool usage not recorded: %s", type(exc).__name__)
