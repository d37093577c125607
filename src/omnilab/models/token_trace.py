"""The token ids and logprobs of one model call, stored compactly.

A token-exact call (:mod:`omnilab.models.tokens`) records the ids the policy saw and the ids it
sampled, so a trainer never re-tokenizes a chat. Ids are stored as base64 of a little-endian
``uint32`` array and logprobs as base64 of a ``float32`` array: about 5.3 characters a token
instead of one JSON number each. A multi-turn rollout is one growing sequence: a call's prompt
usually extends the previous call's prompt and sample, so a trace stores only the new tail of its
prompt and names the sequence it extends by ``base`` (the :func:`digest` of those ids).
"""

from __future__ import annotations

import base64
import hashlib
import sys
from array import array
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

__all__ = [
    "TokenTrace",
    "digest",
    "id_array",
    "pack_floats",
    "pack_ids",
    "unpack_floats",
    "unpack_ids",
]


def _little(values: array[int] | array[float]) -> bytes:
    if sys.byteorder != "little":
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def _from_little(code: str, data: bytes) -> array[int] | array[float]:
    values = array(code)
    values.frombytes(data)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def id_array(ids: Sequence[int]) -> array[int]:
    """``ids`` as a ``uint32`` array (``ids`` itself when it is one already: not copied)."""
    if isinstance(ids, array) and ids.typecode == "I":
        return ids
    return array("I", ids)


def pack_ids(ids: Sequence[int]) -> str:
    """Token ids as base64 of a little-endian ``uint32`` array."""
    return base64.b64encode(_little(id_array(ids))).decode("ascii")


def unpack_ids(text: str) -> list[int]:
    """The ids :func:`pack_ids` packed."""
    return _from_little("I", base64.b64decode(text)).tolist()  # type: ignore[return-value]


def pack_floats(values: Sequence[float]) -> str:
    """Floats as base64 of a little-endian ``float32`` array."""
    return base64.b64encode(_little(array("f", values))).decode("ascii")


def unpack_floats(text: str) -> list[float]:
    """The floats :func:`pack_floats` packed."""
    return _from_little("f", base64.b64decode(text)).tolist()  # type: ignore[return-value]


def digest(ids: Sequence[int]) -> str:
    """A short name of a token sequence (SHA-256 of its packed ids, 32 hex digits)."""
    return hashlib.sha256(_little(id_array(ids))).hexdigest()[:32]


class TokenTrace(BaseModel):
    """The tokens of one call: ``prompt`` (after ``base``), the sampled ``ids`` and their
    ``logprobs``, each packed (see the module's docstring)."""

    model_config = ConfigDict(frozen=True)

    tokenizer: str
    """What the ids belong to (``gguf:<file name>``, a Hugging Face tokenizer's name)."""
    base: str | None = None
    """The :func:`digest` of the sequence this call's prompt extends (an earlier call's prompt
    and sample, then template tokens); ``None`` when ``prompt`` is the whole prompt."""
    base_len: int = 0
    """How many ids ``base`` stands for."""
    prompt: str
    """The prompt's ids after the base, packed."""
    ids: str
    """The sampled ids, packed (the end-of-turn token included when the model sampled it)."""
    logprobs: str
    """One log probability per sampled id, packed (the sampling model's own distribution)."""
    sequence: str
    """The :func:`digest` of the whole sequence: prompt then sampled ids."""

    @classmethod
    def build(
        cls,
        tokenizer: str,
        prompt: Sequence[int],
        ids: Sequence[int],
        logprobs: Sequence[float],
        *,
        base_len: int = 0,
        base_digest: str | None = None,
    ) -> TokenTrace:
        """The trace of a call whose whole prompt is ``prompt``; its first ``base_len`` ids
        are stored by reference (they must be an earlier call's sequence, whose :func:`digest`
        is ``base_digest`` when the caller knows it already)."""
        if len(ids) != len(logprobs):
            raise ValueError(f"{len(ids)} sampled ids but {len(logprobs)} logprobs")
        # Each id list made an array and its bytes once: the packed tail, the base's digest
        # and the whole sequence's digest are cuts of the same bytes (no list concatenated).
        whole = _little(id_array(prompt))
        sampled = _little(id_array(ids))
        cut = 4 * base_len
        if base_len and base_digest is None:
            base_digest = hashlib.sha256(whole[:cut]).hexdigest()[:32]
        sequence = hashlib.sha256(whole)
        sequence.update(sampled)
        return cls(
            tokenizer=tokenizer,
            base=base_digest if base_len else None,
            base_len=base_len,
            prompt=base64.b64encode(whole[cut:]).decode("ascii"),
            ids=base64.b64encode(sampled).decode("ascii"),
            logprobs=pack_floats(logprobs),
            sequence=sequence.hexdigest()[:32],
        )

    def prompt_tail(self) -> list[int]:
        """The prompt's ids after the base."""
        return unpack_ids(self.prompt)

    def sampled(self) -> list[int]:
        """The sampled ids."""
        return unpack_ids(self.ids)

    def sampled_logprobs(self) -> list[float]:
        """The log probability of each sampled id."""
        return unpack_floats(self.logprobs)
