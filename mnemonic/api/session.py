"""Who may talk to the daemon: the API token and the dashboard's browser sessions.

API clients send ``Authorization: Bearer <token>``. A browser cannot keep that token safely
(any script on the page could read it), so the dashboard logs in differently:

1. a client holding the token asks the daemon for a **login link** (``POST
   /api/v1/dashboard/login-links``): a random one-time code valid for two minutes;
2. the browser opens ``/login?code=...``; the daemon burns the code and answers with a
   session cookie (HttpOnly, SameSite=Strict: no script and no other site can use it), a
   readable CSRF cookie, and a redirect to ``/``;
3. each later request carries the session cookie; a state-changing one (anything but GET,
   HEAD, OPTIONS) must also echo the CSRF cookie in ``X-CSRF-Token`` (double submit: a page
   on another origin can make the browser send the cookie but cannot read it).

Everything lives in memory and belongs to the token in force: rotating the token
(:meth:`WebAuth.set_token`) ends every session and voids every unused login link, and a
restart does the same. Codes and session ids are compared in constant time and only their
SHA-256 is kept, so a memory dump shows no usable value.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.cookies import SimpleCookie

SESSION_COOKIE = "mnemonic_session"
CSRF_COOKIE = "mnemonic_csrf"
CSRF_HEADER = "x-csrf-token"
LOGIN_TTL_S = 120.0
SESSION_TTL_S = 7 * 24 * 3600.0
"""A session lasts a week of idle time at most; each use extends it (the dashboard is a
page a person keeps open all day)."""
MAX_SESSIONS = 64
MAX_PENDING_LOGINS = 64
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).digest()


@dataclass(slots=True)
class Session:
    csrf: str
    expires: float


@dataclass(slots=True)
class LoginLink:
    code: str
    expires_in_s: float


@dataclass(slots=True)
class WebAuth:
    """The token in force, the pending login codes and the open sessions.

    One instance per daemon, shared by the security guard (checks), the login route
    (redeems) and token rotation (``set_token``)."""

    token: str
    clock: Callable[[], float] = time.monotonic
    login_ttl_s: float = LOGIN_TTL_S
    session_ttl_s: float = SESSION_TTL_S
    _logins: dict[bytes, float] = field(default_factory=dict)
    _sessions: dict[bytes, Session] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.token.strip():  # "Bearer " with nothing after it would match an empty one
            raise ValueError("the API token must not be empty")

    # ---- the bearer token ----------------------------------------------------------------

    def bearer_ok(self, header: bytes | None) -> bool:
        if header is None or header[:7].lower() != b"bearer ":
            return False
        return hmac.compare_digest(header[7:].strip(), self.token.encode())

    def token_ok(self, value: str) -> bool:
        return hmac.compare_digest(value.encode("utf-8", "surrogateescape"), self.token.encode())

    def set_token(self, token: str) -> int:
        """Put a new token in force; every session and login code ends. Answers how many
        sessions were open (the rotation route reports it)."""
        if not token.strip():
            raise ValueError("the API token must not be empty")
        self.token = token
        ended = len(self._sessions)
        self._sessions.clear()
        self._logins.clear()
        return ended

    # ---- one-time login codes ------------------------------------------------------------

    def mint_login(self) -> LoginLink:
        now = self.clock()
        self._expire(now)
        if len(self._logins) >= MAX_PENDING_LOGINS:  # drop the oldest: minting is bearer-only
            oldest = min(self._logins, key=self._logins.__getitem__)
            del self._logins[oldest]
        code = secrets.token_urlsafe(32)
        self._logins[_digest(code)] = now + self.login_ttl_s
        return LoginLink(code=code, expires_in_s=self.login_ttl_s)

    def redeem_login(self, code: str) -> tuple[str, str] | None:
        """Burn ``code``; a fresh ``(session_id, csrf_token)`` when it was valid, else None.
        A code works once, and not after its two minutes."""
        now = self.clock()
        expires = self._logins.pop(_digest(code), None)
        if expires is None or expires < now:
            return None
        self._expire(now)
        if len(self._sessions) >= MAX_SESSIONS:
            oldest = min(self._sessions, key=lambda k: self._sessions[k].expires)
            del self._sessions[oldest]
        session_id = secrets.token_urlsafe(32)
        csrf = secrets.token_urlsafe(32)
        self._sessions[_digest(session_id)] = Session(csrf, now + self.session_ttl_s)
        return session_id, csrf

    # ---- sessions ------------------------------------------------------------------------

    def session_of(self, cookie_header: bytes | None) -> Session | None:
        """The live session the request's cookie names, extended on use; else None."""
        session_id = cookie_value(cookie_header, SESSION_COOKIE)
        if not session_id:
            return None
        key = _digest(session_id)
        session = self._sessions.get(key)
        now = self.clock()
        if session is None:
            return None
        if session.expires < now:
            del self._sessions[key]
            return None
        session.expires = now + self.session_ttl_s
        return session

    def end_session(self, cookie_header: bytes | None) -> bool:
        session_id = cookie_value(cookie_header, SESSION_COOKIE)
        if not session_id:
            return False
        return self._sessions.pop(_digest(session_id), None) is not None

    @property
    def sessions(self) -> int:
        return len(self._sessions)

    def _expire(self, now: float) -> None:
        for key in [k for k, t in self._logins.items() if t < now]:
            del self._logins[key]
        for key in [k for k, s in self._sessions.items() if s.expires < now]:
            del self._sessions[key]


def csrf_ok(session: Session, header: bytes | None) -> bool:
    if not header:
        return False
    return hmac.compare_digest(header.strip(), session.csrf.encode())


def cookie_value(cookie_header: bytes | None, name: str) -> str | None:
    """One cookie's value from a ``Cookie`` header; a malformed header names none."""
    if not cookie_header:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(cookie_header.decode("latin-1"))
    except Exception:  # noqa: BLE001 - http.cookies raises CookieError and others on junk
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


def session_cookies(session_id: str, csrf: str, max_age_s: int) -> list[str]:
    """``Set-Cookie`` values for a new session. The session cookie is HttpOnly (no script
    reads it) and SameSite=Strict (no other site's page sends it); the CSRF cookie is
    readable by the dashboard's own script, which echoes it in ``X-CSRF-Token``. No
    ``Secure``: the daemon speaks plain HTTP on loopback."""
    common = f"Path=/; Max-Age={max_age_s}; SameSite=Strict"
    return [
        f"{SESSION_COOKIE}={session_id}; {common}; HttpOnly",
        f"{CSRF_COOKIE}={csrf}; {common}",
    ]


def cleared_cookies() -> list[str]:
    common = "Path=/; Max-Age=0; SameSite=Strict"
    return [f"{SESSION_COOKIE}=; {common}; HttpOnly", f"{CSRF_COOKIE}=; {common}"]
