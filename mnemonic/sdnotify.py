"""A tiny built-in ``sd_notify``: tell systemd (``Type=notify``) when the daemon is ready
and when it is stopping.

The protocol is one datagram of ``KEY=VALUE`` lines to the ``AF_UNIX`` socket named by
``$NOTIFY_SOCKET`` (a leading ``@`` means Linux's abstract namespace). Without that
variable the daemon is not under systemd and every call is a no-op. Notification is a
courtesy to the supervisor, never a reason to fail: errors are logged at debug level and
swallowed, so a vanished socket cannot take the daemon down or stall its shutdown.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

log = logging.getLogger(__name__)

ENV_VAR = "NOTIFY_SOCKET"


def socket_address(value: str | None) -> str | None:
    """The address to send to, or None when there is nothing usable to notify.

    Only filesystem paths and abstract names are supported; systemd also allows
    ``vsock:`` addresses for VMs, which a desktop memory daemon never runs under.
    """
    if not value:
        return None
    if value.startswith("@"):
        return "\0" + value[1:]
    if value.startswith("/"):
        return value
    return None


def notify(*lines: str, environ: Mapping[str, str] | None = None) -> bool:
    """Send ``lines`` (for example ``"READY=1"``, ``"STATUS=..."``) as one datagram.

    Returns whether the datagram was sent; never raises.
    """
    env = os.environ if environ is None else environ
    address = socket_address(env.get(ENV_VAR))
    if address is None or not lines:
        return False
    payload = "\n".join(lines).encode("utf-8", errors="replace")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.settimeout(1.0)  # a full receive queue must not block shutdown
            sock.connect(address)
            sock.sendall(payload)
    except OSError as exc:
        log.debug("sd_notify to %r failed: %s", env.get(ENV_VAR), exc)
        return False
    return True


def status(text: str, *more: str, environ: Mapping[str, str] | None = None) -> bool:
    """A ``STATUS=`` line (shown by ``systemctl status``) plus any other lines."""
    one_line = " ".join(text.split())
    return notify(*more, f"STATUS={one_line}", environ=environ)
