"""Per-user, per-repo chat state in Redis: the history list and the last @codebase context.

Keys (all under one prefix, all with a TTL that each write renews):
    <prefix>:<user>:<repo>:history   list of JSON messages, newest last, at most `max_messages`
    <prefix>:<user>:<repo>:context   JSON of the last @codebase retrieval (context text + sources)

`REDIS_URL` points at any Redis; without it an embedded real redis-server runs with the app
(`embedded_redis.py`), persisting to the data directory. When Redis is down a call raises
`ChatStoreUnavailable` with a message for the user; redis-py reconnects on the next call, and
an embedded server that died is started again by the call that finds it gone.

A stalled Redis (hung, stopped, swapping) must not stall the app: a call waits at most
`REDIS_TIMEOUT` and is not tried again (`embedded_redis.redis_client`). The first timeout is
noticed for every thread: calls then fail at once for `QUIET_SECONDS`, after which one call
tries Redis again while the others go on failing at once until it knows. So a page or a chat
turn spends at most one timeout, and a stopped Redis costs the app one timeout per quiet
period, not one per request. A Redis that can't write to its disk (`MISCONF`: full,
read-only) still answers reads; writes and pings fail with a message that says so ("the
disk is full").
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import redis

from codeqa.chat.embedded_redis import EmbeddedRedis, EmbeddedRedisBusy, EmbeddedRedisError, redis_client
from codeqa.core.errors import UnavailableError, one_line

log = logging.getLogger("codeqa.chat_store")

DEFAULT_PREFIX = "codeqa"
REDIS_TIMEOUT = 2.0  # seconds a call waits for Redis to connect or answer, once
QUIET_SECONDS = 10.0  # after a timeout, calls fail at once this long before one tries again
TRYING = math.inf  # the quiet period while one call tries a stalled Redis again


class ChatStoreUnavailable(UnavailableError):
    """Redis cannot be reached; the message is shown in the chat."""

    code = "redis_unavailable"


@dataclass(frozen=True)
class StoredContext:
    query: str
    text: str
    sources: list[dict]
    created_at: float


_CONNECTION_ERRORS = (redis.ConnectionError, OSError)


def _disk_problem(reply: str) -> str:
    """What a `MISCONF` reply says about Redis's disk, in a few words: the AOF's error names the
    system's reason (`...AOF file: No space left on device`); the RDB's says only that it failed."""
    reason = reply.rsplit(": ", 1)[-1].strip().rstrip(".")
    if "No space left" in reason:
        return "the disk is full"
    if "Read-only file system" in reason:
        return "its disk is read-only"
    return "it can't save to its disk (its log says why)"


class ChatStore:
    """History and context in a Redis given as a client, or in the embedded one (`embedded`)."""

    def __init__(
        self,
        client: redis.Redis | None = None,
        *,
        embedded: EmbeddedRedis | None = None,
        prefix: str = DEFAULT_PREFIX,
        ttl_seconds: int = 7 * 24 * 3600,
        max_messages: int = 200,
        description: str = "Redis",
    ) -> None:
        self._client = client
        self._embedded = embedded
        self.prefix = prefix
        self.ttl_seconds = ttl_seconds
        self.max_messages = max_messages
        self.description = description
        self._quiet_until = 0.0  # time.monotonic() before which calls fail at once (after a timeout)
        self._quiet_lock = threading.Lock()  # guards `_quiet_until`: one for every thread

    @classmethod
    def connect(cls, redis_url: str, data_dir: Path, **kwargs) -> ChatStore:
        if redis_url:
            client = redis_client(REDIS_TIMEOUT, url=redis_url)
            return cls(client, description=f"Redis at {_redact(redis_url)}", **kwargs)
        embedded = EmbeddedRedis(data_dir, socket_timeout=REDIS_TIMEOUT)
        embedded.client()  # start it now: a server that can't start is reported at start-up
        return cls(embedded=embedded, description="the embedded Redis", **kwargs)

    def key(self, user: str, repo: str, kind: str) -> str:
        return f"{self.prefix}:{user}:{repo}:{kind}"

    def _call(self, action):
        """Run `action(client)`; every failure is a `ChatStoreUnavailable` saying why."""
        trying_again = self._enter()
        try:
            return self._run(action)
        finally:
            if trying_again:
                self._leave()

    def _enter(self) -> bool:
        """Fail at once while Redis is known to be stalled. The first call after a quiet period
        tries it again (True), and the others go on failing at once until that one knows."""
        with self._quiet_lock:
            if time.monotonic() < self._quiet_until:
                raise self._stalled()
            if not self._quiet_until:
                return False
            self._quiet_until = TRYING
            return True

    def _leave(self) -> None:
        """The call that tried a stalled Redis again is done: unless it timed out too (which
        started a new quiet period), Redis answers again."""
        with self._quiet_lock:
            if self._quiet_until == TRYING:
                self._quiet_until = 0.0

    def _run(self, action):
        """`action` on the store's Redis; every failure a `ChatStoreUnavailable`."""
        try:
            if self._embedded is not None:
                return self._embedded_call(action, self._embedded)
            assert self._client is not None  # a store has a client or an embedded server
            return self._attempt(action, self._client)
        except EmbeddedRedisBusy as exc:
            raise ChatStoreUnavailable(exc.message) from exc
        except _CONNECTION_ERRORS as exc:
            raise ChatStoreUnavailable(
                f"{self.description} is unavailable ({exc.__class__.__name__}): the conversation "
                "can't be loaded or saved until it is reachable again."
            ) from exc

    def _embedded_call(self, action, embedded: EmbeddedRedis):
        """`action` on the embedded server; one that died is started again and the action retried."""
        try:
            return self._attempt(action, embedded.client())
        except (EmbeddedRedisError, *_CONNECTION_ERRORS) as exc:
            log.warning("the embedded Redis failed (%s); starting it again", exc)
        try:
            return self._attempt(action, embedded.recover())
        except (EmbeddedRedisError, *_CONNECTION_ERRORS) as exc:
            raise ChatStoreUnavailable(
                f"The embedded Redis stopped and could not be started again ({one_line(exc, 160)}): the "
                "conversation can't be loaded or saved; the server log has the details."
            ) from exc

    def _attempt(self, action, client: redis.Redis):
        """`action(client)`, with the failures that no restart mends said as they are: a timeout
        (the server is stalled, not gone: restarting it would not help) and a refused write."""
        try:
            return action(client)
        except redis.TimeoutError as exc:
            with self._quiet_lock:
                self._quiet_until = time.monotonic() + QUIET_SECONDS
            log.warning("%s did not answer within %g s", self.description, REDIS_TIMEOUT)
            raise self._stalled() from exc
        except redis.ResponseError as exc:
            if "MISCONF " not in str(exc):  # a pipeline's error starts "Command # 1 (RPUSH ...) of pipeline"
                raise
            log.warning("%s refuses writes: %s", self.description, exc)
            raise ChatStoreUnavailable(
                f"{self.description} can't write to its disk ({_disk_problem(str(exc))}): "
                "the conversation is not saved until it can."
            ) from exc

    def _stalled(self) -> ChatStoreUnavailable:
        return ChatStoreUnavailable(
            f"{self.description} did not answer within {REDIS_TIMEOUT:g} s: the "
            "conversation can't be loaded or saved until it answers again."
        )

    def ping(self) -> tuple[bool, str]:
        try:
            self._call(lambda r: r.ping())
            return True, ""
        except ChatStoreUnavailable as exc:
            return False, str(exc)

    # History ------------------------------------------------------------------------------------

    def history(self, user: str, repo: str) -> list[dict]:
        raw = self._call(lambda r: r.lrange(self.key(user, repo, "history"), 0, -1))
        return [json.loads(item) for item in raw]

    def append(self, user: str, repo: str, *messages: dict) -> None:
        """Add messages, keep the newest `max_messages`, renew the TTL — one round trip."""
        key = self.key(user, repo, "history")
        stamped = [json.dumps({**m, "ts": m.get("ts", time.time())}) for m in messages]

        def write(r: redis.Redis) -> None:
            pipe = r.pipeline()
            pipe.rpush(key, *stamped)
            pipe.ltrim(key, -self.max_messages, -1)
            pipe.expire(key, self.ttl_seconds)
            pipe.expire(self.key(user, repo, "context"), self.ttl_seconds)
            pipe.execute()

        self._call(write)

    def clear(self, user: str, repo: str) -> None:
        self._call(lambda r: r.delete(self.key(user, repo, "history"), self.key(user, repo, "context")))

    # Context ------------------------------------------------------------------------------------

    def save_context(self, user: str, repo: str, context: StoredContext) -> None:
        payload = json.dumps(context.__dict__)
        self._call(lambda r: r.set(self.key(user, repo, "context"), payload, ex=self.ttl_seconds))

    def load_context(self, user: str, repo: str) -> StoredContext | None:
        raw = self._call(lambda r: r.get(self.key(user, repo, "context")))
        return StoredContext(**json.loads(raw)) if raw else None

    def close(self) -> None:
        """Close the connection; stop the embedded server if this process started it."""
        if self._embedded is not None:
            self._embedded.close()
            return
        try:
            self._client.close()  # type: ignore[union-attr]
        except redis.RedisError:
            log.debug("closing Redis failed", exc_info=True)


def _redact(url: str) -> str:
    """Hide a password in a Redis URL before it reaches a message."""
    if "@" not in url:
        return url
    scheme, rest = url.split("://", 1) if "://" in url else ("redis", url)
    return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"
