"""The one number extractor, on answers as models write them (table-driven), and units."""

from __future__ import annotations

import pytest

from omnilab.bench.scoring import (
    convert,
    expected_unit,
    extract_number,
    extract_quantity,
    label_tolerance,
)

# (answer as a model wrote it, the number a person grading it reads; None: no number)
ANSWERS: list[tuple[object, float | None]] = [
    # the shapes OmniAgent asks for (Appendix B.5: "a single number string, e.g. "10.3"")
    ("10.3", 10.3),
    ("4", 4.0),
    (7, 7.0),
    (26.4, 26.4),
    (True, None),
    # units and exponents: the exponent is never the answer
    ("26.4 m^2", 26.4),
    ("26.4 m²", 26.4),
    ("26.4m^2", 26.4),
    ("about 26.4 square meters", 26.4),
    ("The room is roughly 5 m x 4 m, so 20 m2", 20.0),
    ("10.3 m", 10.3),
    ("The sofa is 2.1m long.", 2.1),
    ("approximately 150 cm", 150.0),
    ("It is about 12.5 km away", 12.5),
    ("45%", 45.0),
    ("$1,234.50", 1234.5),
    ("~3.5", 3.5),
    ("-3.5 degrees", -3.5),
    ("1e-3", 0.001),
    # decimal commas where unambiguous, thousands otherwise
    ("26,4", 26.4),
    ("26,4 m²", 26.4),
    ("0,125", 0.125),
    ("3,75 metres", 3.75),
    ("1,234", 1234.0),
    ("12,345,678 views", 12345678.0),
    ("1.234,5", 1234.5),
    ("1,234.5", 1234.5),
    # English number words
    ("two", 2.0),
    ("ten", 10.0),
    ("Ten.", 10.0),
    ("There are seventeen chairs.", 17.0),
    ("twenty", 20.0),
    ("twenty-one", 21.0),
    ("twenty one people", 21.0),
    ("a hundred and five", 105.0),
    ("two dozen eggs", 24.0),
    ("He knocked twice.", 2.0),
    ("none", 0.0),
    ("zero", 0.0),
    # the number closest to the end, ids and names aside
    ("There are 2 tables in room 3", 2.0),
    ("I counted 3 people on floor 2", 3.0),
    ("Camera 2 shows 5 cars.", 5.0),
    ("The player #23 scores 3 goals", 3.0),
    ("from 2012 to 2014, so 2 years", 2.0),
    ("In 2019 there were 5 bikes", 5.0),
    ("3 out of 5 lights are on", 3.0),
    ("video 41069025.mp4 shows 3 chairs", 3.0),
    ("see videos/VSI-Bench/41069043.mp4", None),
    ("4e6dbb4a-c110-4382-801c-8c4120bd50ec", None),
    ("The clip c110-4382 has 6 cats", 6.0),
    ("room_3", None),
    ("Answer: **4**", 4.0),
    ("The answer is 7.", 7.0),
    ("10-12 people", 12.0),
    ("at 5:31 the count is 8", 8.0),
    ("5:31", None),
    ("the one on the left", None),
    ("No one", None),
    ("one", 1.0),
    ("He came 2nd", 2.0),
    ("He came 2nd with 3 points", 3.0),
    ("v1.2.3", None),
    ("I cannot tell.", None),
    ("", None),
]


@pytest.mark.parametrize(("answer", "expected"), ANSWERS)
def test_numbers_are_read_as_a_person_would(answer: object, expected: float | None) -> None:
    got = extract_number(answer)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


def test_the_table_is_large() -> None:
    assert len(ANSWERS) >= 40


@pytest.mark.parametrize(
    ("answer", "unit"),
    [
        ("26.4 m^2", "m2"),
        ("26.4 square meters", "m2"),
        ("10.3 m", "m"),
        ("150 cm", "cm"),
        ("3 ft", "ft"),
        ("12 sq ft", "ft2"),
        ("20 seconds", "s"),
        ("2 tables", None),
        ("4", None),
    ],
)
def test_units_are_kept(answer: str, unit: str | None) -> None:
    quantity = extract_quantity(answer)
    assert quantity is not None
    assert quantity.unit == unit


@pytest.mark.parametrize(
    ("question", "unit"),
    [
        ("What is the size of this room (in square meters)?", "m2"),
        (
            "What is the length of the longest dimension of the table, measured in centimeters?",
            "cm",
        ),
        ("What is the distance between the sofa and the TV (in meters)?", "m"),
        ("How many chair(s) are in this room?", None),
    ],
)
def test_the_unit_a_question_asks_for(question: str, unit: str | None) -> None:
    assert expected_unit(question) == unit


def test_conversion_to_the_asked_unit() -> None:
    cm = extract_quantity("150 cm")
    assert cm is not None
    assert convert(cm, "m") == pytest.approx(1.5)
    area = extract_quantity("10 sq ft")
    assert area is not None
    assert convert(area, "m2") == pytest.approx(0.9290304)
    # Another dimension, or no unit asked: the value as written.
    assert convert(cm, "m2") == 150.0
    assert convert(cm, None) == 150.0


def test_label_precision_comes_from_the_same_reader() -> None:
    assert label_tolerance("26,4") == pytest.approx(0.05)
    assert label_tolerance("twenty") == 0.5
    assert label_tolerance("room 3 holds 12.25 m²") == pytest.approx(0.005)
