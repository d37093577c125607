"""Reading a number out of an answer: the one rule every numeric scorer and adapter uses.

OmniAgent asks NUM/SIZE answers as "a single number string, e.g. "10.3"" (Appendix B.5, Figure 4)
and gives no rule for anything else a model writes, so the rule is ours, chosen to read an answer
the way a person grading it would:

1. A JSON number is itself (``true``/``false`` are not numbers).
2. Candidates in text are digit numbers (``26.4``, ``1,234``, ``-3``, ``45%``, ``$12``, ``1e-3``,
   ``3/4``) and English number words (``two``, ``twenty-one``, ``a hundred and five``,
   ``a dozen``, ``twice``, ``none``).
3. Decimal commas are read where unambiguous: ``26,4`` and ``0,125`` are decimals; ``1,234`` and
   ``12,345,678`` are thousands (English usage), ``1.234,5`` is 1234.5.
4. Not candidates: unit exponents (``m^2``, ``m²``, ``cm3``), digits inside identifiers and file
   names (``c110-4382``, ``41069025.mp4``, ``room_3``, ``A3``, ``v1.2.3``, paths, URLs), a number
   after an id word (``room 3``, ``camera 2``, ``#4``, ``no. 5``, ``option 2``), a year after
   ``in``/``since``/... (``in 2019``), the denominator of ``3 out of 5``, clock times (``5:31``),
   and ``one`` used as a pronoun (``the one on the left``).
5. The candidate closest to the end wins ("from 2012 to 2014, so 2 years" -> 2); an ordinal
   (``3rd``) counts only when there is no other candidate.

:func:`extract_quantity` also reads the unit written after the number; :mod:`.units` turns a
quantity into the unit a question asks for (``150 cm`` for "in meters" -> 1.5), which the MRA
scorer of size questions uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from omnilab.bench.scoring.units import SPELLINGS, Quantity, unit_after

__all__ = ["Quantity", "blank_names", "extract_number", "extract_quantity"]


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_ONES = {
    "zero": 0,
    "none": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000, "dozen": 12}
_ALONE = {"once": 1, "twice": 2, "thrice": 3}
# Words after which a number names something rather than counts it ("room 3", "camera 2").
_ID_WORDS = _word_set(
    "room id # item question q task step frame camera cam floor level page "
    "chapter part section figure fig fig. video clip scene shot episode ep ep. player channel "
    "track option version v line row column col seat gate platform route bus apt apartment unit "
    "building block lane exit season day table image photo slide person object sample"
)
_YEAR_WORDS = _word_set("in since during until till year")
_PRONOUN_BEFORE = _word_set("the this that which each every any no another some")
_CURRENCY = "$€£¥~≈<>≤≥"
_PUNCT = ".,;:!?()[]{}\"'*`“”‘’«»"

_FILE_OR_PATH = re.compile(
    r"\S*\.(?:mp4|mkv|avi|mov|webm|m4v|wav|mp3|flac|m4a|ogg|opus|aac|jpg|jpeg|png|gif|bmp|webp"
    r"|tif|tiff|txt|json|jsonl|csv|tsv|pdf|md|srt|vtt|zip)\b\S*"
    r"|\S*[A-Za-z_]\S*[/\\]\S*|\S*[/\\]\S*[A-Za-z_]\S*|\w+://\S+",
    re.IGNORECASE,
)
_DIGITS = r"[0-9]+(?:[.,][0-9]+)*"
_NUMBER_TOKEN = re.compile(
    rf"(?P<sign>[-+])?(?P<num>{_DIGITS}(?:[eE][-+]?[0-9]+)?|\.[0-9]+)"
    r"(?:/(?P<den>[0-9]+))?(?P<suffix>%|°|[A-Za-z]+(?:\^?[23²³])?|\^?[23²³])?"
)
_ORDINAL = frozenset({"st", "nd", "rd", "th"})
# Units read as units (the number counts) though no conversion is known for them.
_OTHER_UNITS = _word_set(
    "x k kg g mg lb lbs oz mph kph kmh fps hz khz mhz db px pt pts yr yrs l ml w kw"
)
_RANGE = re.compile(rf"^{_DIGITS}[-–~]({_DIGITS})$")
_CLOCK = re.compile(r"^[0-9]{1,2}(?::[0-9]{2}){1,2}(?:\.[0-9]+)?$")


def _digits_value(num: str) -> tuple[float, int] | None:
    """The value of a digit string with ``.``/``,`` separators, and its decimals; ``None`` when
    the separators say it is not one number (``1.2.3``)."""
    if "e" in num.lower():
        try:
            return float(num), 0
        except ValueError:
            return None
    dots, commas = num.count("."), num.count(",")
    groups = re.split(r"[.,]", num)
    if dots and commas:
        decimal = "." if num.rfind(".") > num.rfind(",") else ","
        thousands = "," if decimal == "." else "."
        whole, _, frac = num.rpartition(decimal)
        if num.count(decimal) != 1 or any(len(g) != 3 for g in whole.split(thousands)[1:]):
            return None
        return float(whole.replace(thousands, "") + "." + frac), len(frac)
    sep = "." if dots else "," if commas else ""
    if not sep:
        return float(num), 0
    if len(groups) > 2:
        # 1,234,567 or 1.234.567 are thousands; anything else (1.2.3, 1,2,3) is no one number.
        if all(len(g) == 3 for g in groups[1:]) and not groups[0].startswith("0"):
            return float("".join(groups)), 0
        return None
    whole, frac = groups
    if sep == "," and len(frac) == 3 and whole and not (whole == "0" or whole.startswith("0")):
        return float(whole + frac), 0  # 1,234: English thousands
    return float((whole or "0") + "." + frac), len(frac)


@dataclass(frozen=True)
class _Candidate:
    quantity: Quantity
    ordinal: bool
    end: int
    """Character offset just past the number (and an attached unit), for reading a unit."""


def _word_tokens(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def _clean(token: str) -> str:
    return token.strip(_PUNCT).lower()


def _numeric(token: str, start: int) -> _Candidate | None:
    """A digit number in one whitespace token, or ``None`` when the token is not a number."""
    core = token.rstrip(_PUNCT)
    lead = len(core) - len(core.lstrip(_PUNCT + _CURRENCY))
    core = core[lead:]
    if not core or _CLOCK.match(core):
        return None
    match = _NUMBER_TOKEN.fullmatch(core)
    if match is None:
        ranged = _RANGE.match(core)
        if ranged is None:
            return None
        # "10-12": the end of a range is the number closest to the end.
        lead += ranged.start(1)
        core = ranged.group(1)
        match = _NUMBER_TOKEN.fullmatch(core)
        if match is None:
            return None
    parsed = _digits_value(match["num"])
    if parsed is None:
        return None
    value, decimals = parsed
    if match["den"]:
        if float(match["den"]) == 0:
            return None
        value /= float(match["den"])
    if match["sign"] == "-":
        value = -value
    suffix = match["suffix"] or ""
    ordinal = suffix.lower() in _ORDINAL
    unit: str | None = None
    if suffix and not ordinal and suffix not in ("%", "°"):
        unit = SPELLINGS.get(suffix.lower())
        if unit is None and suffix.lower() not in _OTHER_UNITS and suffix[-1] not in "23²³":
            return None  # 4e6dbb4a, 3D, 5G: an identifier or code, not a quantity
    end = start + lead + len(core)
    return _Candidate(Quantity(value, match.group(0), unit, decimals), ordinal, end)


def _word_number(words: list[str]) -> float | None:
    """The value of a run of number words (``["twenty", "one"]``, ``["a", "hundred"]``)."""
    total = current = 0.0
    seen = False
    for word in words:
        if word in ("and", "a", "an"):
            continue
        if word in _ONES:
            current += _ONES[word]
        elif word == "hundred":
            current = (current or 1) * 100
        elif word in _SCALES:
            total += (current or 1) * _SCALES[word]
            current = 0.0
        else:
            return None
        seen = True
    return total + current if seen else None


def _is_number_word(word: str) -> bool:
    return word in _ONES or word in _SCALES


def blank_names(text: str) -> str:
    """``text`` with file names, paths and URLs replaced by spaces (offsets kept), and
    typographic minus signs and spaces made plain, so no digit of a name is read as a number."""
    text = text.replace("−", "-").replace("\u00a0", " ").replace("\u202f", " ")
    return _FILE_OR_PATH.sub(lambda m: " " * len(m.group(0)), text)


def _candidates(text: str) -> list[_Candidate]:
    text = blank_names(text)
    tokens = _word_tokens(text)
    # "twenty-one" and "2-3" are split on hyphens between words; offsets stay exact.
    words: list[tuple[str, int, int]] = []
    for token, start, end in tokens:
        parts = token.split("-")
        if len(parts) > 1 and all(_is_number_word(_clean(p)) for p in parts if p):
            offset = start
            for part in parts:
                words.append((part, offset, offset + len(part)))
                offset += len(part) + 1
        else:
            words.append((token, start, end))
    found: list[_Candidate] = []
    i = 0
    while i < len(words):
        token, start, end = words[i]
        before = _clean(words[i - 1][0]) if i else ""
        word = _clean(token)
        if word in _ALONE:
            found.append(_Candidate(Quantity(float(_ALONE[word]), token), False, end))
            i += 1
            continue
        if _is_number_word(word) or (
            word in ("a", "an") and i + 1 < len(words) and _clean(words[i + 1][0]) in _SCALES
        ):
            j = i
            run: list[str] = []
            while j < len(words):
                w = _clean(words[j][0])
                # "a hundred and five"; "two and three" are two numbers.
                joins = (
                    w == "and"
                    and bool(run)
                    and run[-1] in _SCALES
                    and j + 1 < len(words)
                    and _is_number_word(_clean(words[j + 1][0]))
                )
                if not (_is_number_word(w) or joins or (w in ("a", "an") and j == i)):
                    break
                run.append(w)
                if words[j][0].rstrip(_PUNCT) != words[j][0]:
                    j += 1
                    break  # "two, three": punctuation ends the number
                j += 1
            value = _word_number(run)
            pronoun = run == ["one"] and (before in _PRONOUN_BEFORE or before == "no")
            if value is not None and not pronoun and before not in _ID_WORDS:
                text_of = text[start : words[j - 1][2]].strip(_PUNCT)
                found.append(_Candidate(Quantity(value, text_of), False, words[j - 1][2]))
            i = max(j, i + 1)
            continue
        candidate = _numeric(token, start)
        if candidate is not None and not _excluded(candidate, before, words, i):
            found.append(candidate)
        i += 1
    return found


def _excluded(
    candidate: _Candidate, before: str, words: list[tuple[str, int, int]], i: int
) -> bool:
    if before in _ID_WORDS or words[i][0].startswith("#"):
        return True
    value = candidate.quantity.value
    if before in _YEAR_WORDS and value.is_integer() and 1000 <= value <= 2100:
        return True
    # "3 out of 5": the denominator is not the answer.
    return i >= 2 and before == "of" and _clean(words[i - 2][0]) == "out"


def _with_unit(candidate: _Candidate, text: str) -> Quantity:
    if candidate.quantity.unit is not None:
        return candidate.quantity
    match = unit_after().match(text, candidate.end)
    if match is None:
        return candidate.quantity
    unit = SPELLINGS[match.group(1).lower()]
    q = candidate.quantity
    return Quantity(q.value, q.text, unit, q.decimals)


def extract_quantity(value: object) -> Quantity | None:
    """The answer's number and the unit written after it, by the rule in the module docstring."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Quantity(float(value), str(value))
    if not isinstance(value, str):
        return None
    found = _candidates(value)
    plain = [c for c in found if not c.ordinal]
    if not (plain or found):
        return None
    chosen = (plain or found)[-1]
    return _with_unit(chosen, blank_names(value))


def extract_number(value: object) -> float | None:
    """The answer's number (see the module docstring), or ``None`` when it holds none."""
    quantity = extract_quantity(value)
    return None if quantity is None else quantity.value
