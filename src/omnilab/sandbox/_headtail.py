"""Bounded capture of a stream: the first and last bytes, however much is written."""

from __future__ import annotations

__all__ = ["HeadTail"]


class HeadTail:
    """Keeps the first ``limit // 2`` and the last ``limit - limit // 2`` bytes of a stream.

    Memory stays ``O(limit)`` whatever the program prints (a 100 MB print costs the harness the
    limit, not 100 MB), and the end of the output, where errors usually are, is never lost.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 2)
        self._head_cap = self.limit // 2
        self._tail_cap = self.limit - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def write(self, data: bytes) -> None:
        """Adds bytes read from the stream."""
        self.total += len(data)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        if len(data) >= self._tail_cap:
            self._tail = bytearray(data[-self._tail_cap :])
        else:
            self._tail += data
            # Trim in batches: deleting from the front of a bytearray is cheap only when rare.
            if len(self._tail) > 2 * self._tail_cap:
                del self._tail[: len(self._tail) - self._tail_cap]

    def text(self) -> str:
        """The kept bytes as text, with a marker saying how much was cut between head and tail."""
        tail = bytes(self._tail[-self._tail_cap :]) if self._tail else b""
        kept = len(self._head) + len(tail)
        if kept >= self.total:
            return (bytes(self._head) + tail).decode(errors="replace")
        cut = self.total - kept
        head = bytes(self._head).decode(errors="replace")
        return f"{head}\n[... {cut} bytes cut ...]\n{tail.decode(errors='replace')}"
