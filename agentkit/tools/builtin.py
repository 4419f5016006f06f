"""Built-in tools: a safe calculator, the current time, a sandboxed file reader and a bounded HTTP GET.

    from agentkit.tools.builtin import builtin_tools
    tools = builtin_tools(["calculator", "time", "read_file"], allow_dir="docs/")

Every tool is read-only. `read_file` and `http_get` are factories because they need limits that
belong to the caller (which directory may be read, how much may be fetched).
"""

from __future__ import annotations

import ast
import datetime as dt
import errno
import math
import operator
import os
import stat
import urllib.error
import urllib.parse
import urllib.request
import zoneinfo
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from agentkit.tools import Tool, tool

# -- calculator ---------------------------------------------------------------------------------------

MAX_EXPRESSION_CHARS = 1000
MAX_RESULT_BITS = 20_000
"""Largest integer result (about 6,000 decimal digits): bounds `**`, `*` and `factorial`."""
MAX_FACTORIAL = 1000

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _round(x: float, ndigits: int | None = None) -> float:
    if ndigits is not None and abs(ndigits) > 100:
        raise ValueError("ndigits must be between -100 and 100")
    return round(x, ndigits)


def _factorial(n: float) -> int:
    if n != int(n) or n < 0:
        raise ValueError("factorial needs a non-negative integer")
    if n > MAX_FACTORIAL:
        raise ValueError(f"factorial({int(n)}) is too large (limit {MAX_FACTORIAL})")
    return math.factorial(int(n))


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs, "round": _round, "min": min, "max": max,
    "sqrt": math.sqrt, "exp": math.exp, "log": math.log, "log10": math.log10, "log2": math.log2,
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "atan2": math.atan2, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh,
    "degrees": math.degrees, "radians": math.radians, "floor": math.floor, "ceil": math.ceil,
    "trunc": math.trunc, "hypot": math.hypot, "gcd": math.gcd, "factorial": _factorial,
}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf}


class CalculatorError(ValueError):
    """An expression the calculator refuses or cannot evaluate; the message says why."""


def evaluate(expression: str) -> int | float:
    """Evaluate an arithmetic expression without `eval`: numbers, + - * / // % **, parentheses,
    the constants pi/e/tau and a whitelist of math functions. Results are bounded in size."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"expression too long ({len(expression)} characters, limit {MAX_EXPRESSION_CHARS})")
    text = expression.strip().replace("^", "**").replace("×", "*").replace("÷", "/")
    if not text:
        raise CalculatorError("empty expression")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"not an arithmetic expression: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise CalculatorError("expression is nested too deeply") from None
    try:
        value: int | float = _eval(tree.body)
        return value
    except ZeroDivisionError:
        raise CalculatorError("division by zero") from None
    except OverflowError:
        raise CalculatorError("result too large") from None
    except RecursionError:
        raise CalculatorError("expression is nested too deeply") from None


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise CalculatorError(f"only numbers are allowed, not {node.value!r}")
        return node.value
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        raise CalculatorError(f"unknown name {node.id!r}; constants: {', '.join(_CONSTANTS)}")
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        _check_size(type(node.op), left, right)
        result = _BINARY[type(node.op)](left, right)
        if isinstance(result, complex):
            raise CalculatorError("the result is a complex number (e.g. a fractional power of a negative number)")
        return result
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
            shown = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            raise CalculatorError(f"function {shown!r} is not allowed; allowed: {', '.join(sorted(_FUNCTIONS))}")
        if node.keywords:
            raise CalculatorError("keyword arguments are not allowed")
        args = [_eval(a) for a in node.args]
        try:
            return _FUNCTIONS[node.func.id](*args)
        except (TypeError, ValueError) as exc:
            raise CalculatorError(f"{node.func.id}: {exc}") from None
    raise CalculatorError(f"{type(node).__name__} is not allowed in an arithmetic expression")


def _bits(x: Any) -> float:
    if isinstance(x, int):
        return x.bit_length()
    return math.log2(abs(x)) if x and math.isfinite(x) else 0.0


def _check_size(op: type[ast.operator], left: Any, right: Any) -> None:
    """Refuse integer operations whose result would exceed MAX_RESULT_BITS (9**9**9 would hang)."""
    if not (isinstance(left, int) and isinstance(right, int)):
        return  # float arithmetic overflows to OverflowError/inf, it cannot hang
    if op is ast.Pow and abs(left) > 1 and right > 0 and math.log2(abs(left)) * right > MAX_RESULT_BITS:
        raise CalculatorError(f"{left}**{right} is too large (limit about {int(MAX_RESULT_BITS * 0.30103)} digits)")
    if op is ast.Mult and _bits(left) + _bits(right) > MAX_RESULT_BITS:
        raise CalculatorError("product too large")


@tool(read_only=True, timeout_s=5)
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression and return the result.

    Args:
        expression: e.g. "2 * (3 + 4) ** 2" or "sqrt(2) * pi"; supports + - * / // % ** and math
            functions such as sqrt, log, sin, floor, factorial ("^" also means power).
    """
    value = evaluate(expression)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


# -- time ---------------------------------------------------------------------------------------------


@tool(name="current_time", read_only=True, timeout_s=5)
def current_time(timezone: str = "UTC") -> str:
    """The current date and time.

    Args:
        timezone: an IANA time zone name such as "UTC", "Europe/Paris" or "America/New_York".
    """
    try:
        zone = zoneinfo.ZoneInfo(timezone.strip() or "UTC")
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {timezone!r}; use an IANA name such as 'Europe/Paris'") from None
    now = dt.datetime.now(zone)
    return f"{now.strftime('%A')} {now.isoformat(timespec='seconds')} ({timezone})"


# -- read_file ----------------------------------------------------------------------------------------

MAX_READ_BYTES = 100_000


class SandboxError(PermissionError):
    """A path outside the directory the tool may read."""


MAX_LINK_HOPS = 40


def _inside_parts(base: str, path: str, cwd: list[str]) -> list[str]:
    """The components of `path` (absolute, or relative to the folder `cwd` under `base`), normalised
    lexically; SandboxError when they leave `base`."""
    if os.path.isabs(path):
        rel = os.path.relpath(os.path.normpath(path), base)
    else:
        rel = os.path.normpath(os.path.join(*cwd, path)) if cwd else os.path.normpath(path)
    if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        raise SandboxError(f"{path!r} is outside the allowed directory")
    return [p for p in rel.split(os.sep) if p not in ("", ".")]


def open_inside(root: str | os.PathLike[str], path: str) -> int:
    """Open `path` inside `root` and return the file descriptor, never leaving `root`, whatever
    changes on disk meanwhile: each component is opened relative to its folder's descriptor with
    O_NOFOLLOW, and a symbolic link is read and resolved by hand, refused if it points out."""
    if "\x00" in path:
        raise SandboxError("path contains a NUL character")
    base = os.path.realpath(root)
    todo = _inside_parts(base, path, [])
    done: list[str] = []
    fds = [os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
    hops = 0
    try:
        while todo:
            name = todo.pop(0)
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
            try:
                fd = os.open(name, flags | (os.O_DIRECTORY if todo else 0), dir_fd=fds[-1])
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    if exc.errno == errno.ENOENT:
                        raise FileNotFoundError(f"no such file: {path!r}") from None
                    raise
                try:
                    target = os.readlink(name, dir_fd=fds[-1])
                except OSError:
                    raise exc from None  # not a link: a file where a folder was expected
                hops += 1
                if hops > MAX_LINK_HOPS:
                    raise SandboxError(f"{path!r} has too many levels of symbolic links") from None
                # Start again from the root with the link's target in place of the link.
                todo = _inside_parts(base, target, done) + todo
                for fd_done in fds[1:]:
                    os.close(fd_done)
                del fds[1:], done[:]
                continue
            fds.append(fd)
            done.append(name)
        return fds.pop()
    finally:
        for fd in fds:
            os.close(fd)


def make_read_file(allow_dir: str | os.PathLike[str], max_bytes: int = MAX_READ_BYTES) -> Tool:
    """A `read_file` tool that reads text files inside `allow_dir` (and lists directories there).

    The file is opened relative to the allowed directory without following links out of it
    (`open_inside`), and the opened file itself is checked (a regular file with one link), so a path
    that flips to a symbolic link, or a hard link to an outside file, reads nothing."""
    root = Path(allow_dir)
    if not root.is_dir():
        raise ValueError(f"allowed directory {str(allow_dir)!r} does not exist or is not a directory")

    @tool(read_only=True, timeout_s=10)
    def read_file(path: str) -> str:
        """Read a text file (or list a directory) inside the allowed directory.

        Args:
            path: the file's path, relative to the allowed directory.
        """
        fd = open_inside(root, path)
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                with os.scandir(fd) as it:
                    entries = sorted(e.name + ("/" if e.is_dir(follow_symlinks=False) else "") for e in it)
                return "\n".join(entries) if entries else "(empty directory)"
            if not stat.S_ISREG(info.st_mode):
                raise ValueError(f"{path!r} is not a regular file")
            if info.st_nlink != 1:
                raise SandboxError(f"{path!r} has {info.st_nlink} hard links: it may be a file outside the allowed "
                                   "directory, so it is not read")
            with os.fdopen(os.dup(fd), "rb") as f:
                data = f.read(max_bytes + 1)
        finally:
            os.close(fd)
        if b"\x00" in data[:8192]:
            return f"[{path} is a binary file ({info.st_size} bytes); not shown]"
        text = data[:max_bytes].decode("utf-8", errors="replace")
        if len(data) > max_bytes:
            text += f"\n[file truncated: {info.st_size} bytes, showing the first {max_bytes}]"
        return text

    return read_file


# -- http_get -----------------------------------------------------------------------------------------

MAX_HTTP_BYTES = 200_000
HTTP_TIMEOUT_S = 15.0


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        if urllib.parse.urlsplit(newurl).scheme not in ("http", "https"):
            raise urllib.error.URLError(f"refusing redirect to {newurl!r} (only http and https)")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def make_http_get(max_bytes: int = MAX_HTTP_BYTES, timeout_s: float = HTTP_TIMEOUT_S) -> Tool:
    """An `http_get` tool: fetch an http(s) URL as text, at most `max_bytes`, within `timeout_s`."""
    opener = urllib.request.build_opener(_HttpOnlyRedirects())

    @tool(read_only=True, timeout_s=timeout_s + 5)
    def http_get(url: str) -> str:
        """Fetch a web page or API response by HTTP GET and return its text.

        Args:
            url: an http:// or https:// URL.
        """
        parts = urllib.parse.urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"only http:// and https:// URLs are allowed, not {url!r}")
        request = urllib.request.Request(url.strip(), headers={"User-Agent": "agentkit/0.1"})
        try:
            with opener.open(request, timeout=timeout_s) as response:
                data = response.read(max_bytes + 1)
                status, ctype = response.status, response.headers.get("Content-Type", "")
                charset = response.headers.get_content_charset() or "utf-8"
        except urllib.error.HTTPError as exc:
            body = exc.read(2000).decode("utf-8", errors="replace")
            return f"HTTP {exc.code} {exc.reason}\n{body}"
        if b"\x00" in data[:8192]:
            return f"HTTP {status} ({ctype}): binary content, {len(data)} bytes; not shown"
        text = data[:max_bytes].decode(charset, errors="replace")
        if len(data) > max_bytes:
            text += f"\n[response truncated to the first {max_bytes} bytes]"
        return f"HTTP {status} ({ctype})\n{text}"

    return http_get


# -- by name ------------------------------------------------------------------------------------------

BUILTIN_TOOL_NAMES = ("calculator", "time", "read_file", "http_get")
_ALIASES = {"current_time": "time", "calc": "calculator"}


def parse_tool_names(names: str | Iterable[str] | None) -> list[str]:
    """Comma-separated names (or a list) as a clean list; "", "none" and None mean no tools."""
    if names is None:
        return []
    items = names.split(",") if isinstance(names, str) else list(names)
    cleaned = [n.strip().lower() for n in items if n and n.strip()]
    return [] if cleaned == ["none"] else cleaned


def builtin_tools(names: str | Iterable[str], allow_dir: str | os.PathLike[str] | None = None) -> list[Tool]:
    """The built-in tools by name: calculator, time, read_file (needs `allow_dir`), http_get."""
    tools: list[Tool] = []
    for raw in dict.fromkeys(parse_tool_names(names)):
        name = _ALIASES.get(raw, raw)
        if name == "calculator":
            tools.append(calculator)
        elif name == "time":
            tools.append(current_time)
        elif name == "read_file":
            if allow_dir is None:
                raise ValueError("the read_file tool needs a directory it may read (--allow-dir DIR)")
            tools.append(make_read_file(allow_dir))
        elif name == "http_get":
            tools.append(make_http_get())
        else:
            raise ValueError(f"unknown built-in tool {raw!r}; known: {', '.join(BUILTIN_TOOL_NAMES)}")
    return tools
