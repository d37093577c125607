"""Units written after a number, and converting a quantity to the unit a question asks for.

Lengths, areas and times are known (``m``, ``cm``, ``square meters``, ``sq ft``, ``m^2``, ``m²``,
``seconds``, ...); a size question "(in square meters)" asks for ``m2``, so ``"10 sq ft"`` is
read as 0.929 there. :mod:`.numbers` reads the number; this module only names and converts.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

__all__ = ["SPELLINGS", "Quantity", "convert", "expected_unit", "unit_after", "unit_of"]


@dataclass(frozen=True)
class Quantity:
    """A number read from text, with what was written around it."""

    value: float
    text: str
    """The number as written (``"26,4"``, ``"twenty-one"``)."""
    unit: str | None = None
    """The canonical unit written after it (``"m"``, ``"m2"``, ``"cm"``, ``"s"``), if known."""
    decimals: int = 0
    """Digits after the decimal separator as written (the precision of a label)."""


# Canonical units: (dimension, factor to the dimension's base unit).
_UNITS: dict[str, tuple[str, float]] = {
    "mm": ("length", 0.001),
    "cm": ("length", 0.01),
    "dm": ("length", 0.1),
    "m": ("length", 1.0),
    "km": ("length", 1000.0),
    "in": ("length", 0.0254),
    "ft": ("length", 0.3048),
    "yd": ("length", 0.9144),
    "mi": ("length", 1609.344),
    "mm2": ("area", 1e-6),
    "cm2": ("area", 1e-4),
    "m2": ("area", 1.0),
    "km2": ("area", 1e6),
    "ft2": ("area", 0.09290304),
    "s": ("time", 1.0),
    "min": ("time", 60.0),
    "h": ("time", 3600.0),
}
_NAMES = {
    "mm": "mm millimeter millimeters millimetre millimetres",
    "cm": "cm centimeter centimeters centimetre centimetres",
    "dm": "dm decimeter decimeters decimetre decimetres",
    "m": "m meter meters metre metres",
    "km": "km kilometer kilometers kilometre kilometres",
    "in": "inch inches",
    "ft": "ft foot feet",
    "yd": "yd yard yards",
    "mi": "mi mile miles",
    "s": "s sec secs second seconds",
    "min": "min mins minute minutes",
    "h": "h hr hrs hour hours",
}


def _spellings() -> dict[str, str]:
    """Every spelling of a unit -> its canonical name; areas from lengths (``square meters``,
    ``sq ft``, ``m^2``, ``m²``, ``m2``)."""
    out = {"sqm": "m2", "sqft": "ft2"}
    for canon, names in _NAMES.items():
        area = canon + "2"
        for name in names.split():
            out[name] = canon
            if area not in _UNITS:
                continue
            for spelled in (f"square {name}", f"sq {name}", f"sq. {name}", f"{name} squared"):
                out[spelled] = area
            if len(name) <= 2:  # exponents only on abbreviations: m^2, cm², ft2
                for exponent in ("^2", "²", "2"):
                    out[name + exponent] = area
    return out


# Spellings -> canonical unit; the patterns try longer spellings first.
SPELLINGS = _spellings()


# Compiled on first use, not at import: the two alternations of every spelling took ~12 ms,
# which every evaluation's start paid whether or not it scores numbers.
@functools.cache
def unit_after() -> re.Pattern[str]:
    """A unit spelled right after a number (optional spaces first), longest spelling first."""
    return re.compile(
        r"\s*(" + _alternation() + r")(?![A-Za-z0-9])",
        re.IGNORECASE,
    )


@functools.cache
def _asked_unit() -> re.Pattern[str]:
    # "(in square meters)", "measured in centimeters", "in cm?"
    return re.compile(
        r"\b(?:in|into)\s+(?:units\s+of\s+)?(" + _alternation() + r")(?![A-Za-z0-9])",
        re.IGNORECASE,
    )


def _alternation() -> str:
    return "|".join(re.escape(s) for s in sorted(SPELLINGS, key=len, reverse=True))


def unit_of(name: str) -> str | None:
    """The canonical unit of a spelling (``"square meters"`` -> ``"m2"``), or ``None``."""
    return SPELLINGS.get(name.strip().lower())


def expected_unit(question: str) -> str | None:
    """The unit a question asks for (``"(in square meters)"`` -> ``"m2"``), or ``None``."""
    match = _asked_unit().search(question)
    return SPELLINGS[match.group(1).lower()] if match else None


def convert(quantity: Quantity, unit: str | None) -> float:
    """``quantity`` in ``unit`` when both units are known and measure the same thing (length,
    area, time); otherwise its value as written (a unit slip is the model's, not ours)."""
    if unit is None or quantity.unit is None or quantity.unit == unit:
        return quantity.value
    have, want = _UNITS[quantity.unit], _UNITS.get(unit)
    if want is None or have[0] != want[0]:
        return quantity.value
    return quantity.value * have[1] / want[1]
