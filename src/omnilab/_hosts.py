"""Host names of the ``Host`` header, for servers bound to this machine (DNS-rebinding checks)."""

from __future__ import annotations

__all__ = ["LOOPBACK", "host_name"]

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
"""The names a request to a server bound to loopback carries when it comes from this machine."""


def host_name(value: str) -> str:
    """The host of a ``Host`` header or URL authority, without its port, lower-case."""
    value = value.strip().lower()
    if value.startswith("["):  # [::1]:8360
        end = value.find("]")
        return value[1:end] if end > 0 and _port(value[end + 1 :]) else value
    if value.count(":") != 1:
        return value
    host, _, port = value.partition(":")
    # Anything but digits after the colon ("localhost:80@evil.example") is not a port: the
    # whole value is then the name, which matches no allowed one.
    return host if _port(":" + port) else value


def _port(rest: str) -> bool:
    """Whether ``rest`` (what follows the host) is empty or ``:DIGITS``."""
    return rest == "" or (rest.startswith(":") and rest[1:].isascii() and rest[1:].isdigit())
