"""Per-user, per-repo chat state in Redis: the history list and the last @codebase context.

Keys (all under one prefix, all with a TTL that each write renews):
    <prefix>:<user>:<repo>:history   list of JSON messages, newest last, at most `max_messages`
    <prefix>:<user>:<repo>:context   JSON of the last @codebase retrieval (context text + sources)

`REDIS_URL` points at any Redis; without it an embedded real redis-server runs with the app
(`embedded_redis.py`), persisting to the data directory. When Redis is down a call raises
`ChatStoreUnavailable` with a message for the user; redis-py reconnects on the next call, and
an embedded server that died is started again by the call that finds it gone.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import redis

from codeqa.chat.embedded_redis import EmbeddedRedis, EmbeddedRedisError
from codeqa.core.errors import UnavailableError, one_line

log = logging.getLogger("codeqa.chat_store")

DEFAULT_PREFIX = "codeqa"


class ChatStoreUnavailable(UnavailableError):
    """Redis cannot be reached; the message is shown in the chat."""

    code = "redis_unavailable"


@dataclass(frozen=True)
class StoredContext:
    query: str
    text: str
    sources: list[dict]
    created_at: float


_CONNECTION_ERRORS = (redis.ConnectionError, redis.TimeoutError, OSError)


class ChatStore:
    """History and context in a Redis given as a client, or in the embedded one (`embedded`)."""

    def __init__(self, client: redis.Redis | None = None, *, embedded: EmbeddedRedis | None = None,
                 prefix: str = DEFAULT_PREFIX, ttl_seconds: int = 7 * 24 * 3600,
                 max_messages: int = 200, description: str = "Redis") -> None:
        self._client = client
        self._embedded = embedded
        self.prefix = prefix
        self.ttl_seconds = ttl_seconds
        self.max_messages = max_messages
        self.description = description
        self._lock = threading.Lock()

    @classmethod
    def connect(cls, redis_url: str, data_dir: Path, **kwargs) -> "ChatStore":
        if redis_url:
            client = redis.Redis.from_url(redis_url, socket_timeout=5, socket_connect_timeout=3,
                                          health_check_interval=30)
            return cls(client, description=f"Redis at {_redact(redis_url)}", **kwargs)
        embedded = EmbeddedRedis(data_dir)
        embedded.client()  # start it now: a server that can't start is reported at start-up
        return cls(embedded=embedded, description="the embedded Redis", **kwargs)

    def key(self, user: str, repo: str, kind: str) -> str:
        return f"{self.prefix}:{user}:{repo}:{kind}"

    def _call(self, action):
        """Run `action(client)`; a dead embedded server is started again and the action retried."""
        try:
            return action(self._embedded.client() if self._embedded else self._client)
        except (EmbeddedRedisError, *_CONNECTION_ERRORS) as exc:
            if self._embedded is None:
                raise ChatStoreUnavailable(
                    f"{self.description} is unavailable ({exc.__class__.__name__}): the conversation "
                    "can't be loaded or saved until it is reachable again.") from exc
            log.warning("the embedded Redis failed (%s); starting it again", exc)
        try:
            return action(self._embedded.recover())
        except (EmbeddedRedisError, *_CONNECTION_ERRORS) as exc:
            raise ChatStoreUnavailable(
                f"The embedded Redis stopped and could not be started again ({one_line(exc, 160)}): the "
                "conversation can't be loaded or saved; the server log has the details.") from exc

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
