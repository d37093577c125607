"""The offline search index: building (Python and CLI), ranking, snippets, documents, rebuilds."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.cli.main import app
from omnilab.tools.web import (
    JsonlFields,
    WebError,
    WebErrorCode,
    build_index,
    get_provider,
    open_index,
    sample_corpus_dir,
    sample_index,
)
from omnilab.tools.web.corpus import read_corpus, split_passages
from omnilab.tools.web.index import read_manifest

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
FOLDER = CORPUS / "folder"
runner = CliRunner()


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_index(FOLDER, tmp_path_factory.mktemp("idx") / "folder-index")


def top_ids(index: Path, query: str, k: int = 3) -> list[str]:
    return [h.url_or_id for h in open_index(index).search(query, top_k=k)]


def test_folder_documents_ids_titles_and_skips() -> None:
    docs = {d.id: d for d in read_corpus(FOLDER)}
    # Hidden files and unsupported suffixes are not documents.
    assert sorted(docs) == ["astronomy/jupiter", "coffee", "lighthouse", "rivers", "volcanoes"]
    assert docs["volcanoes"].title == "Mount Etna"  # front matter wins
    assert docs["volcanoes"].url == "https://example.org/etna"
    assert not docs["volcanoes"].text.startswith("---")
    assert docs["astronomy/jupiter"].title == "Jupiter"  # first heading
    assert docs["coffee"].title == "coffee"  # file name
    assert docs["lighthouse"].title == "The Lighthouse of Alexandria"  # <title>


def test_html_becomes_main_text_without_boilerplate() -> None:
    (doc,) = [d for d in read_corpus(FOLDER) if d.id == "lighthouse"]
    assert "Pharos" in doc.text and "Citadel of Qaitbay in 1477" in doc.text
    assert "<p>" not in doc.text and "Log in" not in doc.text and "cookie" not in doc.text


def test_manifest_records_what_was_built(index_dir: Path) -> None:
    manifest = read_manifest(index_dir)
    assert manifest.version == 1 and manifest.format == "omnilab-web-index"
    assert manifest.doc_count == 5
    assert manifest.passage_count > manifest.doc_count  # the long rivers document was cut
    assert manifest.source == str(FOLDER.resolve())


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Galilean moons discovered by Galileo", "corpus://astronomy/jupiter"),
        ("active volcano Sicily eruption", "corpus://volcanoes"),
        ("espresso brewing", "corpus://coffee"),
        ("Seven Wonders lighthouse Pharos", "corpus://lighthouse"),
        ("inland delta Botswana", "corpus://rivers"),
    ],
)
def test_relevant_document_ranks_first(index_dir: Path, query: str, expected: str) -> None:
    assert top_ids(index_dir, query)[0] == expected


def test_stemming_matches_word_forms(index_dir: Path) -> None:
    # "erupting" and "volcanic" share stems with "eruptions" and "volcanoes".
    assert top_ids(index_dir, "erupting volcanos")[0] == "corpus://volcanoes"


def test_snippet_shows_the_matching_passage(index_dir: Path) -> None:
    (hit,) = open_index(index_dir).search("Okavango Botswana", top_k=1)
    assert "Okavango" in hit.snippet and "Botswana" in hit.snippet
    assert len(hit.snippet) <= 310
    assert hit.title == "Rivers" and hit.provider == "local" and hit.score and hit.score > 0
    assert "part 1." not in hit.snippet  # the passage near the term, not the document's start


def test_top_k_is_honoured_and_one_hit_per_document(index_dir: Path) -> None:
    hits = open_index(index_dir).search("rivers water world", top_k=2)
    assert len(hits) <= 2
    ids = [h.url_or_id for h in open_index(index_dir).search("the water of rivers", top_k=10)]
    assert len(ids) == len(set(ids))
    assert len(open_index(index_dir).search("water", top_k=1)) == 1


def test_no_match_and_stopword_queries_return_nothing(index_dir: Path) -> None:
    index = open_index(index_dir)
    assert index.search("zebrafish", top_k=5) == []  # only in a hidden / ignored file
    assert index.search("the of and", top_k=5) == []
    assert index.search("   ", top_k=5) == []


def test_documents_by_id(index_dir: Path) -> None:
    index = open_index(index_dir)
    doc = index.document("astronomy/jupiter")
    assert doc.title == "Jupiter" and "Ganymede" in doc.text
    with pytest.raises(WebError) as err:
        index.document("nope")
    assert err.value.code is WebErrorCode.NOT_FOUND and "nope" in err.value.message


def test_local_provider_searches_the_given_index(index_dir: Path) -> None:
    provider = get_provider("local", index_dir=index_dir)
    hits = asyncio.run(provider.search("Ganymede largest moon", top_k=2))
    assert hits[0].url_or_id == "corpus://astronomy/jupiter"


def test_rebuild_after_the_corpus_changes(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(FOLDER, corpus)
    out = tmp_path / "index"
    build_index(corpus, out)
    assert open_index(out).search("platypus", top_k=3) == []
    first = read_manifest(out).build_id
    (corpus / "platypus.md").write_text("# Platypus\n\nThe platypus is an egg-laying mammal.\n")
    (corpus / "coffee.txt").unlink()
    build_index(corpus, out)
    assert read_manifest(out).build_id != first
    assert top_ids(out, "platypus egg-laying")[0] == "corpus://platypus"
    assert "corpus://coffee" not in top_ids(out, "espresso coffee beans", k=5)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp folders left


def test_jsonl_corpus(tmp_path: Path) -> None:
    out = build_index(CORPUS / "docs.jsonl", tmp_path / "jsonl")
    index = open_index(out)
    assert len(index) == 3
    assert top_ids(out, "Camellia sinensis leaves")[0] == "corpus://tea"
    assert index.document("tea").url == "https://example.org/tea"
    assert index.document("42").title == "Penguins"  # ids are strings


def test_jsonl_with_custom_field_names(tmp_path: Path) -> None:
    source = tmp_path / "custom.jsonl"
    record = {"doc_id": "d1", "heading": "Glaciers", "body": "Glaciers are slow rivers of ice."}
    source.write_text(json.dumps(record) + "\n")
    fields = JsonlFields(id="doc_id", title="heading", text="body")
    (hit,) = open_index(build_index(source, tmp_path / "i", fields=fields)).search("ice", top_k=1)
    assert hit.url_or_id == "corpus://d1" and hit.title == "Glaciers"


def test_bad_corpora_are_one_line_errors(tmp_path: Path) -> None:
    files = {
        "bad.jsonl": '{"id": "a", "text": "fine"}\n{not json\n',
        "dup.jsonl": '{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n',
        "notext.jsonl": '{"id": "a", "body": "x"}\n',
        "notes.pdf": "%PDF-1.4",
    }
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    (tmp_path / "empty").mkdir()
    expected = {
        "missing": "does not exist",
        "bad.jsonl": "bad.jsonl:2: not valid JSON",
        "dup.jsonl": "duplicate id 'a'",
        "notext.jsonl": "--text-field",
        "notes.pdf": ".jsonl file",
        "empty": "no documents",
    }
    for name, words in expected.items():
        with pytest.raises(WebError) as err:
            build_index(tmp_path / name, tmp_path / "out")
        assert err.value.code is WebErrorCode.BAD_CORPUS
        assert words in err.value.message and "\n" not in err.value.message
    assert not (tmp_path / "out").exists()


def test_build_never_overwrites_a_folder_that_is_not_an_index(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("keep me")
    with pytest.raises(WebError, match="not a search index"):
        build_index(FOLDER, precious)
    assert (precious / "thesis.tex").read_text() == "keep me"


def test_opening_a_folder_without_an_index(tmp_path: Path) -> None:
    with pytest.raises(WebError) as err:
        open_index(tmp_path)
    assert err.value.code is WebErrorCode.NO_INDEX and "omnilab index build" in err.value.message


def test_passages_cover_the_text_within_the_size() -> None:
    text = "\n\n".join(f"Paragraph {i} " + "word " * (40 + i * 30) for i in range(8))
    spans = split_passages(text, 300)
    assert all(end - start <= 300 for start, end in spans)
    assert spans[0][0] == 0 and spans == sorted(spans)
    covered = "".join(text[s:e] for s, e in spans).replace(" ", "").replace("\n", "")
    assert covered == text.replace(" ", "").replace("\n", "")


def test_cli_build_and_search(tmp_path: Path) -> None:
    out = tmp_path / "cli-index"
    result = runner.invoke(app, ["index", "build", str(FOLDER), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "indexed 5 documents" in result.output
    result = runner.invoke(app, ["index", "search", str(out), "Galilean moons", "-k", "1"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("1. Jupiter") and "corpus://astronomy/jupiter" in result.output
    assert "2." not in result.output
    result = runner.invoke(app, ["index", "search", str(out), "Galilean moons", "--json"])
    assert json.loads(result.output)[0]["url_or_id"] == "corpus://astronomy/jupiter"


def test_cli_jsonl_field_options(tmp_path: Path) -> None:
    source = tmp_path / "c.jsonl"
    source.write_text(json.dumps({"key": "k1", "body": "Auroras glow near the poles."}) + "\n")
    args = ["index", "build", str(source), "--out", str(tmp_path / "o")]
    result = runner.invoke(app, [*args, "--id-field", "key", "--text-field", "body"])
    assert result.exit_code == 0, result.output
    assert top_ids(tmp_path / "o", "auroras") == ["corpus://k1"]


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "omnilab", "index", "search", str(tmp_path), "anything"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "no search index" in proc.stderr


def test_sample_index_is_built_once_and_answers_demo_questions() -> None:
    path = sample_index()
    built = read_manifest(path).build_id
    assert sample_index() == path and read_manifest(path).build_id == built
    assert read_manifest(path).doc_count == len(list(sample_corpus_dir().glob("*.md")))
    assert top_ids(path, "omnilab demo video")[0] == "corpus://omnilab"
    assert top_ids(path, "OmniGAIA benchmark tasks domains")[0] == "corpus://omnigaia"
    assert top_ids(path, "H.264 video codec standard")[0] == "corpus://h264"
    assert top_ids(path, "contact sheet thumbnails grid")[0] == "corpus://contact-sheet"
    assert "360 tasks" in open_index(path).document("omnigaia").text


def test_cli_default_output_and_sample(tmp_path: Path) -> None:
    result = runner.invoke(app, ["index", "build", str(FOLDER)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    cache = tmp_path / "cache" / "web" / "index"  # the isolated cache dir of tests/conftest.py
    (built,) = cache.iterdir()
    assert built.name.startswith("folder-") and str(built) in result.output
    sample = runner.invoke(app, ["index", "sample"])
    assert sample.exit_code == 0 and Path(sample.output.strip()) == sample_index()
