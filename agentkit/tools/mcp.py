"""MCP client: the tools of a Model Context Protocol server as agentkit tools.

    with Toolkit.from_mcp("python server.py") as kit:    # a stdio command (or a list of arguments)
        Agent(model, tools=[kit]).run("...")
    kit = Toolkit.from_mcp("http://localhost:8000/mcp")   # a streamable-HTTP endpoint

Each tool keeps the server's JSON schema. The official `mcp` SDK is asyncio; one background thread
runs an event loop that holds the session, and the agent's (synchronous) tool calls are handed to it.
A call has a time limit; an error the server reports, an `isError` result, a time-out, a dropped
connection or a server that crashed mid-call comes back to the model as an error observation, never
as an exception out of the run. So does a result the SDK cannot read (a malformed result is not a broken
connection: the next call goes ahead). A result's text is read up to `MAX_RESULT_CHARS` characters (the
tool's own output limit then cuts it for the model), and structured content nested deeper than
`agentkit.jsontext.MAX_JSON_DEPTH` is named, not written out. A server that cannot be started or reached at
all is an error the user acts on: `MCPConnectionError`. The server process is stopped by `close()`, by
leaving the `with` block, and at the latest when the interpreter exits.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import tempfile
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import AsyncExitStack
from datetime import timedelta
from typing import Any

import httpx  # a dependency of openai, so always there

from agentkit.extras import require
from agentkit.tools import Tool, Toolkit

DEFAULT_CALL_TIMEOUT_S = 60.0
DEFAULT_CONNECT_TIMEOUT_S = 30.0
MAX_RESULT_CHARS = 1_000_000
"""The most characters of one tool result's text read (the rest is named in a note)."""
_STDERR_TAIL_CHARS = 2000
log = logging.getLogger(__name__)


class MCPConnectionError(RuntimeError):
    """The MCP server could not be started, reached or initialised."""


class MCPToolError(RuntimeError):
    """One call to an MCP tool failed; the agent shows the message to the model."""


def is_mcp_url(server: str | Sequence[str]) -> bool:
    """Whether `server` names a streamable-HTTP endpoint rather than a command to start."""
    return isinstance(server, str) and server.startswith(("http://", "https://"))


class MCPToolkit(Toolkit):
    """The tools of one MCP server, over a session held by a background event loop.

    Args:
        server: a command that starts a stdio server ("python server.py", or a list of arguments),
            or the URL of a streamable-HTTP endpoint ("http://host:8000/mcp").
        name: the toolkit's name (default: the command or URL).
        timeout_s: the time limit of one tool call.
        connect_timeout_s: the time limit for starting the server and listing its tools.
        prefix: put before every tool name (`prefix_toolname`), to tell apart servers whose tools
            share names.
        env: extra environment variables for a stdio server (it inherits this process's environment).
        cwd: the working directory of a stdio server.
        headers: HTTP headers for a streamable-HTTP server (e.g. an Authorization header).
    """

    def __init__(
        self,
        server: str | Sequence[str],
        *,
        name: str | None = None,
        timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        prefix: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        require("mcp", extra="mcp", feature="MCP servers' tools (Toolkit.from_mcp)")
        label = server if isinstance(server, str) else shlex.join(server)
        if not is_mcp_url(server):
            argv = shlex.split(server) if isinstance(server, str) else list(server)
            if not argv:
                raise ValueError("an MCP server command cannot be empty")
        self.connection = _Connection(server, label=label, timeout_s=timeout_s, env=env, cwd=cwd, headers=headers)
        listed = self.connection.connect(connect_timeout_s)
        tools = [self.connection.make_tool(t, prefix=prefix) for t in listed]
        super().__init__(tools, name=name or label)

    @property
    def connected(self) -> bool:
        """Whether the session is up (False after `close()` or once the server has gone away)."""
        return self.connection.failure is None

    def close(self) -> None:
        """Stop the session (and the server process of a stdio server); idempotent."""
        self.connection.close()

    def __enter__(self) -> MCPToolkit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MCPToolkit({self.name!r}, tools={[t.name for t in self._tools]})"


class _Connection:
    """The event-loop thread and the session on it; tools hold this (not the toolkit), so the
    session lives as long as any of its tools does. A finalizer stops it at interpreter exit."""

    def __init__(self, server: str | Sequence[str], *, label: str, timeout_s: float,
                 env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None,
                 headers: Mapping[str, str] | None) -> None:
        self.server = server
        self.label = label
        self.timeout_s = timeout_s
        self.env = env
        self.cwd = cwd
        self.headers = dict(headers or {})
        self.failure: str | None = "not connected"
        self.session: Any = None
        self._in_flight: set[asyncio.Task[Any]] = set()
        # The server's stderr, kept to explain a crash; closed with the connection.
        self.stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="agentkit-mcp", daemon=True)
        self.thread.start()
        # What the finalizer needs, without a reference back to this object.
        self._handles: dict[str, Any] = {"stop": None, "task": None, "done": threading.Event()}
        self._finalizer = weakref.finalize(self, _shutdown, self.loop, self.thread, self._handles, self.stderr)

    # -- lifecycle ------------------------------------------------------------------------------
    def connect(self, timeout_s: float) -> list[Any]:
        """Start the session and list the server's tools; raise MCPConnectionError on failure."""
        ready: Future[list[Any]] = Future()
        asyncio.run_coroutine_threadsafe(self._hold(ready), self.loop)
        try:
            tools = ready.result(timeout=timeout_s)
        except FutureTimeout:
            self.close()
            raise MCPConnectionError(
                f"MCP server {self.label} did not start and list its tools within {timeout_s:g} s"
                + self._stderr_note()) from None
        except Exception as exc:
            self.close()
            raise MCPConnectionError(
                f"cannot connect to MCP server {self.label}: {_describe(exc)}" + self._stderr_note()) from exc
        self.failure = None
        return tools

    async def _hold(self, ready: Future[list[Any]]) -> None:
        """Open the transport and the session, list the tools, then wait for `close()` — all in one
        task, as the SDK's context managers require."""
        from mcp import ClientSession

        stop = self._handles["stop"] = asyncio.Event()
        self._handles["task"] = asyncio.current_task()
        try:
            async with AsyncExitStack() as stack:
                read, write = await self._open_transport(stack)
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                tools: list[Any] = []
                cursor = None
                while True:
                    page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
                    tools.extend(page.tools)
                    cursor = page.nextCursor
                    if not cursor:
                        break
                self.session = session
                ready.set_result(tools)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            elif self.failure is None:
                self.failure = f"the connection failed: {_describe(exc)}"
            if not isinstance(exc, Exception):
                raise
        finally:
            self.session = None
            if self.failure is None:
                self.failure = "the connection was closed"
            self._handles["done"].set()

    async def _open_transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        if is_mcp_url(self.server):
            from mcp.client.streamable_http import streamable_http_client

            # The SDK leaves a request pending when its HTTP stream breaks (the server died mid-call);
            # the watched transport notices the broken connection and fails the calls in flight.
            transport = _WatchedTransport(httpx.AsyncHTTPTransport(), self._connection_broke)
            client = await stack.enter_async_context(httpx.AsyncClient(
                transport=transport, headers=self.headers, follow_redirects=True,
                timeout=httpx.Timeout(30.0, read=max(300.0, self.timeout_s + 5))))
            read, write, _ = await stack.enter_async_context(streamable_http_client(str(self.server),
                                                                                    http_client=client))
            return read, write
        from mcp.client.stdio import StdioServerParameters, stdio_client

        argv = shlex.split(self.server) if isinstance(self.server, str) else list(self.server)
        params = StdioServerParameters(command=argv[0], args=argv[1:], env={**os.environ, **(self.env or {})},
                                       cwd=None if self.cwd is None else os.fspath(self.cwd))
        read, write = await stack.enter_async_context(stdio_client(params, errlog=self.stderr))
        return read, write

    def close(self) -> None:
        if self.failure is None:
            self.failure = "the toolkit was closed"
        self._finalizer()

    # -- calls ----------------------------------------------------------------------------------
    def make_tool(self, spec: Any, *, prefix: str | None) -> Tool:
        """An agentkit tool that calls the MCP tool `spec` (an `mcp.types.Tool`)."""
        remote = spec.name
        schema = dict(spec.inputSchema or {"type": "object", "properties": {}})
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        annotations = getattr(spec, "annotations", None)

        def call(**arguments: Any) -> str:
            return self.call(remote, arguments)

        return Tool(
            call,
            name=f"{prefix}_{remote}" if prefix else remote,
            description=(spec.description or "").strip() or f"The {remote} tool of the MCP server {self.label}.",
            read_only=bool(getattr(annotations, "readOnlyHint", False)),
            timeout_s=None,  # the limit is enforced here, with a message naming the server
            parameters=schema,
        )

    def call(self, tool_name: str, arguments: dict[str, Any]) -> str:
        """Call one tool and return its text; raise MCPToolError (an observation) on any failure."""
        if self.failure is not None or self.session is None:
            raise MCPToolError(f"MCP server {self.label} is not connected: {self.failure}" + self._stderr_note())
        future = asyncio.run_coroutine_threadsafe(self._call(tool_name, arguments), self.loop)
        try:
            result = future.result(timeout=self.timeout_s + 2)
        except FutureTimeout:
            future.cancel()
            raise MCPToolError(f"MCP tool {tool_name} did not answer within {self.timeout_s:g} s") from None
        except MCPToolError:
            raise
        except Exception as exc:
            raise self._call_failed(tool_name, exc) from exc
        text = render_content(result)
        if result.isError:
            raise MCPToolError(text or f"MCP tool {tool_name} reported an error without a message")
        return text

    async def _call(self, tool_name: str, arguments: dict[str, Any]) -> Any:
        session = self.session
        if session is None:
            raise MCPToolError(f"MCP server {self.label} is not connected: {self.failure}")
        task = asyncio.current_task()
        assert task is not None
        self._in_flight.add(task)
        try:
            return await session.call_tool(tool_name, arguments,
                                           read_timeout_seconds=timedelta(seconds=self.timeout_s))
        except asyncio.CancelledError:
            if self.failure is None:
                raise
            raise MCPToolError(f"MCP server {self.label} went away: {self.failure}") from None
        finally:
            self._in_flight.discard(task)

    def _connection_broke(self, exc: BaseException) -> None:
        """Called on the loop when an HTTP connection to the server breaks: fail the calls in flight."""
        if self.failure is None and self.session is not None:
            self.failure = f"the connection broke ({_describe(exc)})"
        for task in list(self._in_flight):
            task.cancel()

    def _call_failed(self, tool_name: str, exc: Exception) -> MCPToolError:
        from mcp.shared.exceptions import McpError
        from mcp.types import CONNECTION_CLOSED
        from pydantic import ValidationError

        if isinstance(exc, ValidationError) or (isinstance(exc, RuntimeError) and "structured content" in str(exc)):
            # The server answered, with a result the SDK could not read: the connection is fine.
            log.warning("MCP server %s answered %s with an unreadable result: %s", self.label, tool_name, exc)
            return MCPToolError(f"MCP server {self.label} answered {tool_name} with a result that could not be read "
                                f"({_describe(exc)[:300]})")

        if isinstance(exc, McpError) and exc.error.code != CONNECTION_CLOSED:
            if "Timed out" in exc.error.message:
                return MCPToolError(f"MCP tool {tool_name} did not answer within {self.timeout_s:g} s")
            return MCPToolError(f"MCP server {self.label} answered {tool_name} with an error: {exc.error.message}")
        # The connection is gone (the server crashed or the endpoint went away): fail fast from now on.
        self.failure = f"the connection was lost during a call to {tool_name} ({_describe(exc)})"
        return MCPToolError(f"MCP server {self.label} went away: {self.failure}" + self._stderr_note())

    def _stderr_note(self) -> str:
        if is_mcp_url(self.server):
            return ""
        try:
            self.stderr.flush()
            self.stderr.seek(0, os.SEEK_END)
            size = self.stderr.tell()
            self.stderr.seek(max(0, size - _STDERR_TAIL_CHARS))
            tail = self.stderr.read().strip()
        except (OSError, ValueError):
            return ""
        return f"\nserver stderr (last lines):\n{tail}" if tail else ""


class _WatchedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that reports broken connections (not time-outs) to `on_break`."""

    def __init__(self, inner: httpx.AsyncBaseTransport, on_break: Callable[[BaseException], None]) -> None:
        self.inner = inner
        self.on_break = on_break

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self.inner.handle_async_request(request)
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            self.on_break(exc)
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _WatchedStream(response.stream, self.on_break)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class _WatchedStream(httpx.AsyncByteStream):
    """A response body that reports a connection broken while reading it."""

    def __init__(self, inner: httpx.AsyncByteStream, on_break: Callable[[BaseException], None]) -> None:
        self.inner = inner
        self.on_break = on_break

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.inner:
                yield chunk
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            self.on_break(exc)
            raise

    async def aclose(self) -> None:
        await self.inner.aclose()


def render_content(result: Any) -> str:
    """An MCP tool result as text: text blocks joined, other blocks named, structured content as JSON
    when there is no text. At most `MAX_RESULT_CHARS` characters are read, with a note on what was left out;
    structured content nested deeper than `MAX_JSON_DEPTH` (or that cannot be written as JSON) is named."""
    parts: list[str] = []
    size = 0
    blocks = result.content if isinstance(result.content, list) else []
    for i, block in enumerate(blocks):
        if size >= MAX_RESULT_CHARS:
            parts.append(f"[{len(blocks) - i} more content blocks not read]")
            break
        kind = getattr(block, "type", "")
        if kind == "text":
            text = block.text if isinstance(block.text, str) else ""
        elif kind == "resource":
            inner = block.resource
            text = getattr(inner, "text", None) or f"[resource {inner.uri} ({inner.mimeType or 'binary'})]"
        elif kind == "resource_link":
            text = f"[resource {block.uri}]"
        else:  # image, audio
            text = f"[{kind} ({getattr(block, 'mimeType', 'unknown type')})]"
        if size + len(text) > MAX_RESULT_CHARS:
            text = (text[: MAX_RESULT_CHARS - size]
                    + f"\n[... {len(text):,} characters in this block; the rest was not read]")
        parts.append(text)
        size += len(text) + 1  # and the line break that joins it to the next
    if not parts and result.structuredContent is not None:
        parts.append(_structured_text(result.structuredContent))
    return "\n".join(parts)


def _structured_text(value: Any) -> str:
    """Structured content as JSON text, bounded in depth and length."""
    import json

    from agentkit.models.boundary import arguments_problem

    problem = arguments_problem("the result", value) if isinstance(value, dict) else None
    if problem is not None:
        return f"[structured content that could not be shown: {problem.replace('the arguments of the result', 'it')}]"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return "[structured content that could not be written as JSON]"
    if len(text) > MAX_RESULT_CHARS:
        return text[:MAX_RESULT_CHARS] + f"\n[... {len(text):,} characters of JSON; the rest was not read]"
    return text


def _describe(exc: BaseException) -> str:
    """A one-line description of an exception, looking inside exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _shutdown(loop: asyncio.AbstractEventLoop, thread: threading.Thread, handles: dict[str, Any], stderr: Any) -> None:
    """Close the session (a stdio server gets its stdin closed, then SIGTERM, then SIGKILL) and the loop."""
    if loop.is_closed():
        return
    task, done = handles.get("task"), handles["done"]
    if task is not None and thread.is_alive():
        stop = handles.get("stop")
        if stop is not None:
            loop.call_soon_threadsafe(stop.set)
        if not done.wait(timeout=6.0):  # still starting up, or a wedged transport: cancel it
            loop.call_soon_threadsafe(task.cancel)
            done.wait(timeout=6.0)
    if thread.is_alive():
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5.0)
    if not thread.is_alive():
        loop.close()
    stderr.close()
