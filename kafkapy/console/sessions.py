"""Browser sessions: a random id in an HttpOnly cookie, the state kept in the console's memory.

A session holds the form token (every POST must echo it: another site cannot make a logged-in
browser act) and, on a SASL cluster, the user's credentials. Credentials never go into a
cookie; they live as long as the console process or the session's idle timeout.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import Response

from kafkapy.console.clients import Credentials

COOKIE = "kafkapy_console_session"
IDLE_TIMEOUT_S = 8 * 3600
MAX_SESSIONS = 10_000  # bounded: a client cycling cookies cannot grow the table without end


@dataclass(slots=True)
class Session:
    id: str
    csrf_token: str
    credentials: Credentials | None = None
    last_seen: float = field(default_factory=time.monotonic)


class SessionStore:
    def __init__(self, secure_cookies: bool = False) -> None:
        self._sessions: dict[str, Session] = {}
        # Served over HTTPS: the session cookie must never travel over plain HTTP.
        self._secure = secure_cookies

    def get(self, request: Request) -> Session | None:
        sid = request.cookies.get(COOKIE)
        session = self._sessions.get(sid) if sid else None
        if session is None:
            return None
        now = time.monotonic()
        if now - session.last_seen > IDLE_TIMEOUT_S:
            del self._sessions[session.id]
            return None
        session.last_seen = now
        return session

    def create(self) -> Session:
        if len(self._sessions) >= MAX_SESSIONS:
            oldest = min(self._sessions.values(), key=lambda s: s.last_seen)
            del self._sessions[oldest.id]
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32))
        self._sessions[session.id] = session
        return session

    def drop(self, session: Session) -> None:
        self._sessions.pop(session.id, None)

    def set_cookie(self, response: Response, session: Session) -> None:
        response.set_cookie(
            COOKIE, session.id, httponly=True, samesite="strict", path="/", secure=self._secure
        )
