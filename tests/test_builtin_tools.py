"""The built-in tools: calculator (correct and safe), time, sandboxed read_file, bounded http_get."""

from __future__ import annotations

import datetime as dt
import http.server
import math
import os
import threading
import time
import zoneinfo
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit.tools import ToolRunner
from agentkit.tools.builtin import (
    MAX_FACTORIAL,
    CalculatorError,
    SandboxError,
    builtin_tools,
    calculator,
    current_time,
    evaluate,
    make_http_get,
    make_read_file,
)

# -- calculator -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("17 * 23", 17 * 23),
        ("2 * (3 + 4) ** 2", 2 * (3 + 4) ** 2),
        ("-7 // 2", -7 // 2),
        ("-7 % 3", -7 % 3),
        ("1 / 8", 1 / 8),
        ("2 ** -2", 2**-2),
        ("2^10", 2**10),
        ("sqrt(2) * pi", math.sqrt(2) * math.pi),
        ("log(1000, 10)", math.log(1000, 10)),
        ("floor(e ** 3)", math.floor(math.e**3)),
        ("factorial(20)", math.factorial(20)),
        ("max(3, min(9, 4), abs(-5))", 5),
        ("round(2.71828, 2)", round(2.71828, 2)),
        ("atan2(1, 1) * 4", math.atan2(1, 1) * 4),
        ("3 × 4 ÷ 6", 3 * 4 / 6),
    ],
)
def test_calculator_computes(expression: str, expected: float) -> None:
    assert evaluate(expression) == pytest.approx(expected)
    assert float(calculator(expression)) == pytest.approx(expected)


def test_calculator_prints_integral_floats_as_integers_and_keeps_big_integers_exact() -> None:
    assert calculator("10 / 2") == str(10 // 2)
    assert calculator("2 ** 200") == str(2**200)
    assert calculator("factorial(30)") == str(math.factorial(30))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-50, 50), min_size=2, max_size=6),
    st.lists(st.sampled_from(["+", "-", "*", "//", "%"]), min_size=5, max_size=5),
)
def test_calculator_agrees_with_python_on_integer_arithmetic(numbers: list[int], ops: list[str]) -> None:
    expression = str(numbers[0])
    for op, n in zip(ops, numbers[1:], strict=False):
        expression += f" {op} ({n})"
    try:
        expected = eval(expression)  # the test's own trusted oracle on a generated integer expression
    except ZeroDivisionError:
        with pytest.raises(CalculatorError, match="division by zero"):
            evaluate(expression)
        return
    assert evaluate(expression) == expected


HOSTILE = [
    "9**9**9",
    "10 ** 10 ** 10",
    "(2 ** 10000) * (2 ** 10000) * (2 ** 10000)",
    f"factorial({MAX_FACTORIAL + 1})",
    "factorial(-1)",
    "round(5, -10 ** 9)",
    "__import__('os').system('echo pwned')",
    "open('/etc/passwd').read()",
    "(1).__class__.__bases__",
    "[x for x in range(10 ** 9)]",
    "lambda: 0",
    "'a' * 10",
    "True + 1",
    "1j * 1j",
    "x + 1",
    "sqrt(x=4)",
    "math.sqrt(4)",
    "exp(10000)",
    "10.0 ** 400",
    "1 / 0",
    "5 % 0",
    "(-8) ** 0.5",
    "(" * 300 + "1" + ")" * 300,
    "-" * 2000 + "1",
    "1 if 1 else 2",
    "a := 3",
    "",
    "1 +",
]


@pytest.mark.parametrize("expression", HOSTILE)
def test_calculator_refuses_hostile_or_broken_input_quickly(expression: str) -> None:
    start = time.perf_counter()
    with pytest.raises(CalculatorError) as info:
        evaluate(expression)
    assert str(info.value)  # a reason the model can read
    assert time.perf_counter() - start < 1.0


def test_a_refused_expression_becomes_an_error_observation_not_a_crash() -> None:
    runner = ToolRunner()
    try:
        bad, good = runner.run_many([(calculator, "calculator", {"expression": "9**9**9"}),
                                     (calculator, "calculator", {"expression": "6 * 7"})])
    finally:
        runner.close()
    assert bad.is_error and "too large" in bad.content
    assert not good.is_error and good.content == str(6 * 7)


# -- time -------------------------------------------------------------------------------------------


def _parse_time(text: str) -> dt.datetime:
    weekday, stamp, _ = text.split(" ", 2)
    parsed = dt.datetime.fromisoformat(stamp)
    assert weekday == parsed.strftime("%A")
    return parsed


def test_current_time_in_utc_and_another_zone() -> None:
    now = dt.datetime.now(dt.UTC)
    utc = _parse_time(current_time())
    assert abs((utc - now).total_seconds()) < 5
    assert utc.utcoffset() == dt.timedelta(0)
    tokyo = _parse_time(current_time("Asia/Tokyo"))
    assert tokyo.utcoffset() == dt.datetime.now(zoneinfo.ZoneInfo("Asia/Tokyo")).utcoffset()
    assert abs((tokyo - now).total_seconds()) < 5


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../../etc/passwd", "not a zone"])
def test_current_time_refuses_unknown_zones(zone: str) -> None:
    with pytest.raises(ValueError, match="unknown time zone"):
        current_time(zone)


# -- read_file --------------------------------------------------------------------------------------


@pytest.fixture
def sandbox(tmp_path):
    root = tmp_path / "allowed"
    (root / "sub").mkdir(parents=True)
    (root / "notes.txt").write_text("hello from inside\n")
    (root / "sub" / "deep.md").write_text("# deep\n")
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    (tmp_path / "allowed2").mkdir()
    (tmp_path / "allowed2" / "sibling.txt").write_text("SIBLING SECRET")
    return root


def test_read_file_reads_and_lists_inside_the_directory(sandbox) -> None:
    read = make_read_file(sandbox)
    assert read(path="notes.txt") == "hello from inside\n"
    assert read(path="sub/deep.md") == "# deep\n"
    assert read(path="./sub/../notes.txt") == "hello from inside\n"
    assert read(path=str(sandbox / "notes.txt")) == "hello from inside\n"  # absolute, but inside
    assert read(path=".").splitlines() == ["notes.txt", "sub/"]


@pytest.mark.parametrize("path", ["../secret.txt", "sub/../../secret.txt", "/etc/passwd", "../allowed2/sibling.txt",
                                  "~/.bashrc/../../../etc/passwd"])
def test_read_file_refuses_paths_that_escape(sandbox, path: str) -> None:
    read = make_read_file(sandbox)
    with pytest.raises((SandboxError, FileNotFoundError)) as info:
        read(path=path)
    assert "SECRET" not in str(info.value)


def test_read_file_refuses_symlinks_that_point_out(sandbox) -> None:
    os.symlink(sandbox.parent / "secret.txt", sandbox / "link.txt")
    os.symlink(sandbox.parent / "allowed2", sandbox / "linkdir")
    os.symlink(sandbox / "notes.txt", sandbox / "inner_link.txt")
    read = make_read_file(sandbox)
    for path in ("link.txt", "linkdir/sibling.txt", "linkdir"):
        with pytest.raises(SandboxError):
            read(path=path)
    assert read(path="inner_link.txt") == "hello from inside\n"  # a link that stays inside is fine


def test_read_file_truncates_huge_files_and_hides_binary_ones(sandbox) -> None:
    (sandbox / "big.txt").write_text("x" * 5000)
    (sandbox / "blob.bin").write_bytes(bytes(range(256)) * 4)
    read = make_read_file(sandbox, max_bytes=1000)
    big = read(path="big.txt")
    assert big.startswith("x" * 1000) and "x" * 1001 not in big and "truncated: 5000 bytes" in big
    assert "binary file" in read(path="blob.bin")


def test_read_file_refuses_special_files_without_blocking(sandbox) -> None:
    os.mkfifo(sandbox / "pipe")
    with pytest.raises(ValueError, match="not a regular file"):
        make_read_file(sandbox)(path="pipe")


def test_read_file_needs_an_existing_directory(tmp_path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        make_read_file(tmp_path / "missing")


# -- http_get ---------------------------------------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/redirect-"):
            self.send_response(302)
            self.send_header("Location", "file:///etc/passwd" if self.path == "/redirect-file" else "ftp://x/y")
            self.end_headers()
            return
        if self.path == "/missing":
            self.send_error(404, "Not Found")
            return
        body = ("y" * 5000 if self.path == "/big" else "hello over http").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_http_get_fetches_text_within_limits(server: str) -> None:
    get = make_http_get(max_bytes=1000, timeout_s=5)
    page = get(url=f"{server}/hello")
    assert page.startswith("HTTP 200") and "hello over http" in page
    big = get(url=f"{server}/big")
    assert "y" * 1000 in big and "y" * 1001 not in big and "truncated" in big
    assert get(url=f"{server}/missing").startswith("HTTP 404")


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "gopher://x", "/etc/passwd", "http://"])
def test_http_get_refuses_other_schemes(url: str) -> None:
    with pytest.raises(ValueError, match="only http"):
        make_http_get()(url=url)


def test_http_get_refuses_redirects_to_other_schemes(server: str) -> None:
    get = make_http_get(timeout_s=5)
    refused = get(url=f"{server}/redirect-file")  # urllib itself refuses file: redirects
    assert refused.startswith("HTTP 302") and "not allowed" in refused and "root:" not in refused
    with pytest.raises(OSError, match="refusing redirect"):  # ftp: urllib would follow; our handler refuses
        get(url=f"{server}/redirect-ftp")


# -- by name ----------------------------------------------------------------------------------------


def test_builtin_tools_by_name(tmp_path) -> None:
    tools = builtin_tools("calculator, time,read_file,http_get", allow_dir=tmp_path)
    assert [t.name for t in tools] == ["calculator", "current_time", "read_file", "http_get"]
    assert all(t.read_only for t in tools)
    assert builtin_tools("none") == [] and builtin_tools("") == []
    assert [t.name for t in builtin_tools(["time", "time"])] == ["current_time"]


def test_builtin_tools_errors_are_clear(tmp_path) -> None:
    with pytest.raises(ValueError, match=r"unknown built-in tool 'shell'.*calculator"):
        builtin_tools("calculator,shell")
    with pytest.raises(ValueError, match="--allow-dir"):
        builtin_tools("read_file")
