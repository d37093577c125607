"""The one span parser: JSON, clock times, "from X to Y", ranges with units, lists of pairs,
and identifiers whose digits are never times."""

from __future__ import annotations

import pytest

from omnilab.bench.scoring import merge_spans, parse_spans, parse_time

Spans = tuple[tuple[float, float], ...] | None

CASES: list[tuple[object, Spans]] = [
    # OmniAgent's own format and its JSON variants
    ("[[1.4, 40]]", ((1.4, 40.0),)),
    ("[[10.5, 20.0], [35.0, 40.0]]", ((10.5, 20.0), (35.0, 40.0))),
    ("[51.72, 62.92]", ((51.72, 62.92),)),
    ([[101, 111], [178, 179]], ((101.0, 111.0), (178.0, 179.0))),
    ('[["0:01", "0:40"]]', ((1.0, 40.0),)),
    ('{"start": 3, "end": 9.5}', ((3.0, 9.5),)),
    # how people write spans
    ("From 00:01 to 00:40", ((1.0, 40.0),)),
    ("from 0:00 to 5:31.9", ((0.0, 331.9),)),
    ("1:02:03 - 1:02:10", ((3723.0, 3730.0),)),
    ("10-20s", ((10.0, 20.0),)),
    ("12.5s – 20s", ((12.5, 20.0),)),
    ("between 1.4 and 40 seconds", ((1.4, 40.0),)),
    ("1-2 min", ((60.0, 120.0),)),
    ("start: 1.4, end: 40", ((1.4, 40.0),)),
    ("10.5s - 20s and 35-40 s", ((10.5, 20.0), (35.0, 40.0))),
    ("The event occurs from 12.5 seconds to 20 seconds.", ((12.5, 20.0),)),
    ("[10.5, 20], [35, 40]", ((10.5, 20.0), (35.0, 40.0))),
    # digits inside identifiers and file names are not times
    ("c110-4382", None),
    ("4e6dbb4a-c110-4382-801c-8c4120bd50ec", None),
    ("videos/LongVALE/4e6dbb4a-c110-4382-801c-8c4120bd50ec.mp4", None),
    ("...mp4", None),
    ("dd5214e7_720_900.mp4", None),
    ("The clip 4e6dbb4a-c110-4382 shows it at 00:10-00:20.", ((10.0, 20.0),)),
    # unreadable
    ("at 10s", None),
    ("sometime in the middle", None),
    ("It happens at 40 to 10", None),  # ends before it starts
    ([[5, 3]], None),
    ([], None),
]


@pytest.mark.parametrize(("answer", "expected"), CASES)
def test_spans_are_read_as_a_person_would(answer: object, expected: Spans) -> None:
    got = parse_spans(answer)
    if expected is None:
        assert got is None
    else:
        assert got is not None
        flat = [t for span in got for t in span]
        assert flat == pytest.approx([t for span in expected for t in span])


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("40", 40.0), ("12.5s", 12.5), ("1.5 min", 90.0), ("5:31.9", 331.9), ("1:02:03", 3723.0)],
)
def test_times(text: str, seconds: float) -> None:
    assert parse_time(text) == pytest.approx(seconds)


def test_merge_spans() -> None:
    assert merge_spans([(30, 40), (0, 10), (5, 12), (12, 15)]) == [(0, 15), (30, 40)]
