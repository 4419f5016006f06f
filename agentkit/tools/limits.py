"""Time limits for tool calls run in the main thread, without a thread hand-off per call.

A call is watched (`enter` before it starts, `leave` when it ends). One watchdog thread sleeps until the
earliest deadline of the watched calls; when a call passes its limit, the watchdog sends `LIMIT_SIGNAL` to the
main thread, whose handler raises `ToolTimeout` inside the call. That interrupts Python code and blocking system
calls (a sleep, a socket read, a wait on a child process); a long computation inside one C call ends when that
call returns. `usable()` says whether the calling thread can be limited this way: it must be the main thread and
the signal must not be taken by the program. `agentkit.tools.ToolRunner` runs other calls on worker threads.

Typical use:

    watch = enter(limit_s)
    try:
        try:
            value = fn()
        finally:
            passed = leave(watch)
    except BaseException:
        passed = leave(watch)   # idempotent; True when this call's limit passed, whatever the call raised
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from types import FrameType


class ToolTimeout(BaseException):
    """Raised inside a tool call that ran past its time limit. A `BaseException`, so that a tool's own
    `except Exception` does not take it."""


def _limit_signal() -> int | None:
    if not hasattr(signal, "pthread_kill"):
        return None
    realtime = getattr(signal, "SIGRTMAX", None)  # a real-time signal: not one a program commonly uses
    return int(realtime) - 1 if realtime is not None else int(signal.SIGUSR2)


LIMIT_SIGNAL = _limit_signal()
"""The signal that interrupts a call in the main thread (`None` where threads cannot be signalled)."""


class _Watch:
    __slots__ = ("active", "deadline", "fired", "raised")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.active = True
        self.fired = False  # the limit passed while the call ran (set by the watchdog)
        self.raised = False  # ToolTimeout was raised in the call for it


_lock = threading.Lock()
_wake = threading.Condition(_lock)
_watches: list[_Watch] = []
_sleeping_until = math.inf
_watchdog: threading.Thread | None = None
_MAIN = threading.main_thread().ident


def _after_fork() -> None:
    """In a forked child: no watchdog runs there yet, the lock may have been held by it, and the thread that
    forked is the child's main thread."""
    global _lock, _wake, _watches, _sleeping_until, _watchdog, _MAIN
    _lock = threading.Lock()
    _wake = threading.Condition(_lock)
    _watches, _sleeping_until, _watchdog = [], math.inf, None
    _MAIN = threading.get_ident()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def usable() -> bool:
    """Whether a call in the calling thread can be limited here: the main thread, with `LIMIT_SIGNAL` free
    (its handler installed on first use) or already this module's."""
    if LIMIT_SIGNAL is None or threading.get_ident() != _MAIN:
        return False
    handler = signal.getsignal(LIMIT_SIGNAL)
    if handler is _on_signal:
        return True
    if handler in (signal.SIG_DFL, None):
        signal.signal(LIMIT_SIGNAL, _on_signal)
        return True
    return False


def enter(limit_s: float) -> _Watch:
    """Start watching a call in the main thread that may run `limit_s` seconds (check `usable()` first)."""
    global _watchdog
    watch = _Watch(time.monotonic() + limit_s)
    with _lock:
        _watches.append(watch)
        if _watchdog is None:
            _watchdog = threading.Thread(target=_watch_loop, name="agentkit-tool-limits", daemon=True)
            _watchdog.start()
        elif watch.deadline < _sleeping_until:
            _wake.notify()
    return watch


def leave(watch: _Watch) -> bool:
    """Stop watching; True when the call passed its limit. Safe to call twice."""
    with _lock:
        if watch.active:
            watch.active = False
            _watches.remove(watch)
    return watch.fired


def _on_signal(signum: int, frame: FrameType | None) -> None:
    # Runs in the main thread between two bytecodes, possibly while `enter`/`leave` hold the lock: so no lock.
    for watch in tuple(_watches):
        if watch.fired and watch.active and not watch.raised:
            watch.raised = True
            raise ToolTimeout
    # a signal that arrives after its call ended (or not sent here) is ignored


def _watch_loop() -> None:
    global _sleeping_until
    assert LIMIT_SIGNAL is not None and _MAIN is not None
    with _lock:
        while True:
            now = time.monotonic()
            earliest, passed = math.inf, False
            for watch in _watches:
                if watch.fired:
                    continue
                if watch.deadline <= now:
                    watch.fired = passed = True
                else:
                    earliest = min(earliest, watch.deadline)
            if passed:
                signal.pthread_kill(_MAIN, LIMIT_SIGNAL)
            _sleeping_until = earliest
            _wake.wait(None if earliest == math.inf else earliest - now)
