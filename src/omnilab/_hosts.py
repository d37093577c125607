"""Host names of the ``Host`` header, for servers bound to this machine (DNS-rebinding checks)."""

from __future__ import annotations

__all__ = ["LOOPBACK", "host_name"]

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
"""The names a request to a server bound to loopback carries when it comes from this machine."""


def host_name(value: str) -> str:
    """The host of a ``Host`` header or URL authority, without its port, lower-case."""
    value = value.strip().lower()
    if value.startswith("["):  # [::1]:8360
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value
