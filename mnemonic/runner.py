"""The process around the daemon: one instance per data folder, a database check before the
store opens, the listening socket, signals, and systemd notification.

Order matters and each step fails fast with a one-line message and a sysexits code instead
of a traceback: the lock (a second daemon on the same folder would corrupt nothing, SQLite
is safe, but two encoders would race each other), the port (before the model loads, so a
port clash costs milliseconds), the database check (a corrupt file is moved aside rather
than crashing the daemon on every restart), then the app and uvicorn.

Signals are ours, not uvicorn's: uvicorn re-raises a captured SIGTERM after a graceful
shutdown, so the process would die of the signal (exit -15) and a supervisor would count a
clean stop as a failure. Here the first SIGTERM/SIGINT starts a graceful shutdown that ends
with exit 0 within ``grace_s`` (a watchdog enforces the bound), and a second one exits at
once.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from mnemonic import sdnotify
from mnemonic.exits import EX_CONFIG, EX_OK, EX_SOFTWARE, EX_TEMPFAIL, EX_UNAVAILABLE
from mnemonic.paths import Paths
from mnemonic.runtime.heap import limit_malloc_arenas
from mnemonic.store import recovery
from mnemonic.store.database import SchemaTooNew, check_schema

if TYPE_CHECKING:
    import uvicorn
    from starlette.types import ASGIApp

log = logging.getLogger(__name__)

# exits: EX_UNAVAILABLE the port cannot be used; EX_SOFTWARE startup failed or shutdown
# overran its grace period; EX_TEMPFAIL another daemon holds the data folder, or the port
# is taken; EX_CONFIG the database was written by a newer build

LOCK_NAME = "mnemonic.lock"
HANDLED = (signal.SIGINT, signal.SIGTERM)


class AlreadyRunning(Exception):
    """Another process holds the data folder's lock."""

    def __init__(self, lock_path: Path, holder: int | None) -> None:
        who = f"pid {holder}" if holder else "another process"
        super().__init__(
            f"another mnemonic daemon ({who}) is using {lock_path.parent} "
            f"(lock {lock_path} is held); stop it first or set MNEMONIC_HOME to another folder"
        )
        self.lock_path = lock_path
        self.holder = holder


class InstanceLock:
    """An exclusive ``flock`` on ``<data_dir>/mnemonic.lock``, held while the process lives.

    ``flock`` dies with the process, so a killed daemon never leaves a stale lock behind
    (unlike a pid file). The pid written into the file is only for the error message. The
    file itself is never deleted: unlinking a lock file races with a process opening it.
    """

    def __init__(self, path: Path, fd: int | None, *, writable: bool) -> None:
        self.path = path
        self._fd = fd
        self._writable = writable

    @classmethod
    def acquire(cls, data_dir: Path) -> InstanceLock:
        """Take the lock or raise :class:`AlreadyRunning`.

        In a read-only data folder the existing lock file is locked read-only (``flock``
        needs no write access); with no lock file there at all, nothing can be written
        by either daemon, so it runs unlocked rather than refusing to serve reads.
        """
        data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = data_dir / LOCK_NAME
        writable = True
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise
            writable = False
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                log.warning("read-only data folder without a lock file: running unlocked")
                return cls(path, None, writable=False)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            raise AlreadyRunning(path, holder) from None
        except OSError:
            os.close(fd)
            raise
        if writable:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(path, fd, writable=writable)

    def release(self) -> None:
        if self._fd is not None:
            if self._writable:
                with suppress(OSError):  # a full or failing disk must not block exit
                    os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def _read_pid(fd: int) -> int | None:
    text = os.pread(fd, 32, 0).decode("ascii", errors="replace").strip()
    return int(text) if text.isdigit() else None


def bind_listeners(host: str, port: int, backlog: int = 2048) -> list[socket.socket]:
    """Bind and listen on every address ``host`` resolves to, before the slow startup.

    Listening early claims the port (on Linux, two not-yet-listening sockets with
    SO_REUSEADDR can share it); clients that connect during startup wait in the backlog
    until the app is ready instead of being refused.
    """
    infos = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE
    )
    bound: list[socket.socket] = []
    try:
        for family, kind, proto, address in dict.fromkeys((i[0], i[1], i[2], i[4]) for i in infos):
            sock = socket.socket(family, kind, proto)
            bound.append(sock)
            # a restart must not wait for TIME_WAIT connections of the previous process
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(backlog)
    except OSError:
        for sock in bound:
            sock.close()
        raise
    return bound


class _Stopper:
    """Our SIGINT/SIGTERM handling: first signal graceful, second immediate.

    Installed before the model loads, so a signal during startup is handled the same way
    (the default action would kill the process with the signal, a KeyboardInterrupt would
    print a traceback).
    """

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self.requested: int | None = None
        self.server: uvicorn.Server | None = None
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        for sig in HANDLED:
            self._previous[sig] = signal.signal(sig, self._on_signal)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self._previous.clear()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.requested is not None:
            _write_stderr(f"mnemonic: second {name}, exiting now without a clean shutdown\n")
            os._exit(128 + signum)
        self.requested = signum
        log.info("%s received: shutting down (again to force)", name)
        if self.server is not None:
            self.server.should_exit = True  # its shutdown() sends STOPPING=1
        else:
            sdnotify.notify("STOPPING=1", f"STATUS=stopping after {name}")
        watchdog = threading.Timer(self.grace_s, self._overrun)
        watchdog.daemon = True
        watchdog.name = "mnemonic-shutdown-watchdog"
        watchdog.start()

    def attach(self, server: uvicorn.Server) -> None:
        """Hand signals to ``server`` from now on, including one that already arrived."""
        self.server = server
        if self.requested is not None:
            server.should_exit = True

    def _overrun(self) -> None:
        _write_stderr(
            f"mnemonic: shutdown took longer than {self.grace_s:g}s, exiting without finishing\n"
        )
        os._exit(EX_SOFTWARE)


def _write_stderr(text: str) -> None:
    """Unbuffered and allocation-light: safe from a signal handler or a dying thread."""
    with suppress(OSError):
        os.write(2, text.encode("utf-8", errors="replace"))


def _say(message: str) -> None:
    sys.stderr.write(f"mnemonic: {message}\n")
    sys.stderr.flush()


def _server_class() -> type[uvicorn.Server]:
    """A ``uvicorn.Server`` that leaves signals to us and tells systemd about its state."""
    import uvicorn

    class NotifyingServer(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            # the runner's _Stopper owns SIGINT/SIGTERM; uvicorn's would re-raise them
            yield

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and not self.should_exit:
                where = ", ".join(_address(s) for s in sockets or [])
                log.info("ready on %s", where)
                sdnotify.notify("READY=1", f"STATUS=serving on {where}")

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            sdnotify.notify("STOPPING=1", "STATUS=stopping")
            await super().shutdown(sockets=sockets)

    return NotifyingServer


def _address(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def run(
    build_app: Callable[[list[str]], ASGIApp],
    *,
    host: str,
    port: int,
    paths: Paths,
    grace_s: float = 5.0,
) -> int:
    """Run the daemon in the foreground; the process exit code is the return value.

    ``build_app`` receives the reasons health should start "degraded" with (a database
    moved aside) and returns the ASGI app, whose lifespan opens and closes the store.
    """
    # an exceeded RLIMIT_FSIZE should fail the write (then 503), not kill the daemon
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    limit_malloc_arenas()
    stopper = _Stopper(grace_s)
    stopper.install()
    try:
        return _run_locked(build_app, stopper, host, port, paths)
    finally:
        stopper.restore()


def _run_locked(
    build_app: Callable[[list[str]], ASGIApp],
    stopper: _Stopper,
    host: str,
    port: int,
    paths: Paths,
) -> int:
    try:
        lock = InstanceLock.acquire(paths.data_dir)
    except AlreadyRunning as exc:
        _say(str(exc))
        return EX_TEMPFAIL
    try:
        try:
            sockets = bind_listeners(host, port)
        except OSError as exc:
            _say(f"cannot listen on {host}:{port}: {exc.strerror or exc} ({_bind_hint(exc)})")
            return EX_TEMPFAIL if exc.errno == errno.EADDRINUSE else EX_UNAVAILABLE
        # only now, with the folder and the port ours: a second daemon must not say this
        where = ", ".join(_address(s) for s in sockets)
        log.info("starting on %s (data in %s)", where, paths.data_dir)
        try:
            return _serve(build_app, stopper, sockets, paths)
        finally:
            for sock in sockets:
                sock.close()
    finally:
        lock.release()


def _bind_hint(exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return "another program uses the port; choose another with --port or MNEMONIC_PORT"
    if exc.errno == errno.EACCES:
        return "ports below 1024 need privileges; choose a higher port"
    return "check server.host in the configuration"


def _serve(
    build_app: Callable[[list[str]], ASGIApp],
    stopper: _Stopper,
    sockets: Sequence[socket.socket],
    paths: Paths,
) -> int:
    import uvicorn

    sdnotify.status("checking the database")
    notice = recovery.recover(paths.database, datetime.now(UTC))
    try:
        check_schema(paths.database)
    except SchemaTooNew as exc:
        _say(str(exc))
        return EX_CONFIG
    sdnotify.status("loading the embedding model")
    try:
        app = build_app([notice] if notice else [])
    except Exception:
        log.exception("could not build the daemon")
        _say("startup failed (see the log above)")
        return EX_SOFTWARE
    if stopper.requested is not None:
        return EX_OK
    config = uvicorn.Config(
        app,
        lifespan="on",
        log_config=None,  # the root logger set up by the composition root gets everything
        log_level="warning",
        access_log=False,
        # compressing every event frame for every /ws client ran on the event loop: during
        # a 10-client burst it was where all 24 stalls over 250 ms were (loop watchdog);
        # event frames are small JSON, and the stream stays on loopback
        ws_per_message_deflate=False,
        # uvicorn's share of the grace period; the lifespan shutdown (drain, stop agents,
        # checkpoint) gets the rest, and the watchdog bounds the total
        timeout_graceful_shutdown=max(1, int(stopper.grace_s * 0.4)),
    )
    server = _server_class()(config)
    stopper.attach(server)
    sdnotify.status("opening the store")
    try:
        server.run(sockets=list(sockets))
    except SystemExit as exc:  # uvicorn exits this way when the lifespan startup fails
        log.error("startup failed (uvicorn exit %s)", exc.code)
        _say("startup failed (see the log above)")
        return EX_SOFTWARE
    return EX_OK
