"""Event and run ids: unique, uuid-shaped, and different in a forked child."""

from __future__ import annotations

import os
import re

from omnilab._ids import new_id


def test_ids_are_unique_hex_of_uuid_shape() -> None:
    ids = [new_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids[:100])


def test_a_forked_child_draws_other_ids() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next id and leave at once
        os.write(write, new_id().encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 64).decode()
    os.waitpid(pid, 0)
    assert re.fullmatch(r"[0-9a-f]{32}", child) and child != new_id()
