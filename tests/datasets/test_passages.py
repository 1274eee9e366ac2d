"""Paragraph joining, document ids, passage corpora and the deduplicating corpus builder."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from hoprag.datasets.passages import (
    CorpusBuilder,
    doc_id_for,
    load_passage_corpus,
    make_document,
    paragraph_text,
    slugify,
)
from hoprag.errors import EmptyCorpusError, InputError
from hoprag.io.outputs import write_records
from hoprag.records import Document

DATA = Path(__file__).parents[1] / "data"

pytestmark = pytest.mark.unit


def test_hotpot_sentences_keep_their_own_spacing() -> None:
    # HotpotQA "Caesalpinia" (dev record 5a85f2f5...): later sentences start with a space.
    s0 = "Caesalpinia is a genus of flowering plants in the legume family, Fabaceae."
    s1 = " Historically, membership within the genus has been highly variable."
    text, offsets = paragraph_text([s0, s1])
    assert text == s0 + s1
    assert offsets == [(0, 74), (75, 75 + len(s1) - 1)]
    assert text[75 : offsets[1][1]] == s1.strip()


def test_quote_split_sentences_are_not_separated() -> None:
    # HotpotQA "EXO-CBX": the splitter cut inside a quotation; the paragraph is the plain concatenation.
    sentences = [
        "EXO-CBX is the first official sub-unit of the South Korean boy group Exo.",
        ' Their debut extended play "Hey Mama!',
        '" was released in October 2016.',
    ]
    text, offsets = paragraph_text(sentences)
    assert 'extended play "Hey Mama!" was released' in text
    start, end = offsets[2]
    assert text[start:end] == '" was released in October 2016.'
    assert start == len(sentences[0]) + len(sentences[1])


def test_2wiki_sentences_are_joined_with_one_space() -> None:
    # 2Wiki "Teutberga" as in the HippoRAG 2 pooled corpus (first entry of passages_list.json).
    sentences = [
        "Teutberga( died 11 November 875) was a queen of Lotharingia by marriage to Lothair II.",
        "She was a daughter of Bosonid Boso the Elder and sister of Hucbert, the lay- abbot of St. Maurice's Abbey.",
    ]
    text, offsets = paragraph_text(sentences)
    corpus = json.loads((DATA / "passages_list.json").read_text(encoding="utf-8"))
    assert corpus[0] == {"title": "Teutberga", "text": text}
    assert offsets[1] == (len(sentences[0]) + 1, len(sentences[0]) + 1 + len(sentences[1]))


def test_2wiki_slice_paragraphs_reproduce_the_hipporag_corpus_text() -> None:
    corpus = {(e["title"], e["text"]) for e in json.loads((DATA / "passages_list.json").read_text(encoding="utf-8"))}
    record = json.loads((DATA / "2wiki_dev_slice.json").read_text(encoding="utf-8"))[0]
    context = dict((title, sentences) for title, sentences in record["context"])
    # These four paragraphs of the first 2Wiki record were copied into the slice from the pooled corpus.
    for title in ["Dmitri Varfolomeyev (footballer, born 1978)", "Miloš Zličić", "Vadim Vlasov", "La Bestia humana"]:
        assert (title, paragraph_text(context[title])[0]) in corpus


def test_empty_and_blank_sentences_get_empty_spans() -> None:
    # HotpotQA "Huntington Bancshares" ends with an empty sentence; "David Morgan" has a " " one.
    text, offsets = paragraph_text(["A bank.", " Ranked 698.", ""])
    assert text == "A bank. Ranked 698."
    assert offsets[2] == (19, 19)
    text, offsets = paragraph_text(["First.", " ", " Last."])
    assert text == "First.  Last."
    assert offsets == [(0, 6), (6, 6), (8, 13)]


def test_doc_id_is_slug_plus_sha1_prefix() -> None:
    title, text = "Pál Gábor", "Pál Gábor was a Hungarian film director."
    expected_hex = hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()[:8]
    assert doc_id_for(title, text) == f"pal-gabor-{expected_hex}"
    assert doc_id_for(title, text) == doc_id_for(title, text)
    assert doc_id_for(title, text + " ") != doc_id_for(title, text)
    long_id = doc_id_for("List of political entities in the 4th century BC", "x")
    assert re.fullmatch(r"[a-z0-9-]{1,40}-[0-9a-f]{8}", long_id)
    assert long_id.startswith("list-of-political-entities-in-the-4th-ce-")
    assert slugify("ᏔᎾᏏ") == "doc"


def test_list_corpus_loads_documents_with_importer_ids() -> None:
    docs = load_passage_corpus(DATA / "passages_list.json")
    assert len(docs) == 7
    assert docs[0].title == "Teutberga"
    assert docs[0].id == doc_id_for(docs[0].title, docs[0].text)
    assert docs[0].source == "passages_list"
    assert docs[0].metadata == {}


def test_dict_corpus_of_sentences_joins_them() -> None:
    raw = json.loads((DATA / "passages_dict.json").read_text(encoding="utf-8"))
    docs = load_passage_corpus(DATA / "passages_dict.json", source="hotpotqa")
    assert [d.title for d in docs] == list(raw)
    demon = docs[0]
    assert demon.title == "Demon Dice"
    # Every later sentence of the HippoRAG HotpotQA corpus starts with a space: plain concatenation.
    assert demon.text == "".join(raw["Demon Dice"])
    assert demon.source == "hotpotqa"


def test_dict_corpus_of_texts_and_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "texts.json"
    path.write_text(json.dumps({"Tibouchina": "Tibouchina Aubl."}), encoding="utf-8")
    [doc] = load_passage_corpus(path)
    assert (doc.title, doc.text) == ("Tibouchina", "Tibouchina Aubl.")
    jsonl = tmp_path / "corpus.jsonl"
    write_records(jsonl, [Document(id="1001", title="Taylor Kemp", text="Taylor Eric Kemp ...", source="beir")])
    [back] = load_passage_corpus(jsonl)
    assert back == Document(id="1001", title="Taylor Kemp", text="Taylor Eric Kemp ...", source="beir")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('"just a string"', "must be a JSON list or object"),
        ('[{"title": "A"}]', "passage 1: 'text' is missing"),
        ('[{"title": "A", "text": 3}]', "'text' is not a string"),
        ('{"A": 3}', "passage 'A' is a int"),
        ('[{"title": "A", "text": "x"},', "malformed JSON"),
    ],
)
def test_bad_corpus_names_the_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_passage_corpus(path)
    assert str(path) in str(info.value)
    assert message in str(info.value)
    assert "Fix:" in str(info.value)


def test_empty_corpus_is_an_error(tmp_path: Path) -> None:
    for content in ("", "[]", "{}"):
        path = tmp_path / "empty.json"
        path.write_text(content, encoding="utf-8")
        with pytest.raises(EmptyCorpusError, match="empty.json"):
            load_passage_corpus(path)
    with pytest.raises(InputError, match="not found"):
        load_passage_corpus(tmp_path / "absent.json")


def test_corpus_builder_dedups_by_title_and_text_in_order() -> None:
    builder = CorpusBuilder()
    a = builder.add_text("Sutera", "Sutera is a comune.", "hotpotqa")
    b = builder.add_text("Rhodotypos", "Rhodotypos scandens is a shrub.", "hotpotqa")
    again = builder.add(make_document("Sutera", "Sutera is a comune.", "other"))
    other_text = builder.add_text("Sutera", "Sutera is a genus of plants.")
    assert again is a  # the first copy wins, source included
    assert [d.id for d in builder.documents()] == [a.id, b.id, other_text.id]
    assert builder.duplicates_removed == 1
    assert len(builder) == 3


def test_corpus_builder_rejects_one_id_for_two_texts() -> None:
    builder = CorpusBuilder()
    builder.add(Document(id="1", title="A", text="one"))
    with pytest.raises(InputError, match="document id '1'"):
        builder.add(Document(id="1", title="A", text="two"))
