"""Write the offline Omni-DeepSearch sample (omnilab.tools.mediasearch.sample) into a folder,
with the repository's speech sample as the spoken clip, and print how to evaluate it.

    python bench/deepsearch_sample.py ds-sample
    omnilab eval omni-deepsearch --data ds-sample/tasks.jsonl --agent deepsearch \\
        -O index_dir=ds-sample/index --scorer answer_set
"""

from __future__ import annotations

import sys
from pathlib import Path

from omnilab.tools.mediasearch.sample import make_sample

SPEECH = Path(__file__).resolve().parents[1] / "tests" / "data" / "speech" / "two_cities_part1.wav"


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python bench/deepsearch_sample.py OUT_FOLDER")
    out = Path(sys.argv[1])
    data = make_sample(out, speech=SPEECH if SPEECH.is_file() else None)
    print(f"wrote {data}")
    print(
        f"omnilab eval omni-deepsearch --data {data} --agent deepsearch "
        f"-O index_dir={out / 'index'} --scorer answer_set"
    )


if __name__ == "__main__":
    main()
