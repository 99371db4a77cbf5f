"""common/text/sentences.py: where a sentence ends in text as people write it, and how a sentence too long for the
decoder is cut."""
import pytest

from common.text.sentences import split_long, split_sentences


@pytest.mark.parametrize("text, sentences", [
    ("Dr. Smith paid $3.50, e.g. for tea. Then he left!", ["Dr. Smith paid $3.50, e.g. for tea.", "Then he left!"]),
    ("I met J. R. Tolkien in St. Louis. He smiled.", ["I met J. R. Tolkien in St. Louis.", "He smiled."]),
    ('He said "Stop." Then he waited (quietly.) We left.', ['He said "Stop."', "Then he waited (quietly.)",
                                                            "We left."]),
    ("Apples, pears, etc. and more. The end", ["Apples, pears, etc. and more.", "The end"]),
    ("Wait... What happened? It was 3.5 miles, i.e. far.",
     ["Wait...", "What happened?", "It was 3.5 miles, i.e. far."]),
    ("Mr. and Mrs. Brown met Prof. Gray at No. 10.", ["Mr. and Mrs. Brown met Prof. Gray at No. 10."]),
    ("turn the light off", ["turn the light off"]),
    ("  One.\n\nTwo?  ", ["One.", "Two?"]),
    ("", []),
])
def test_sentences_end_where_a_reader_hears_them_end(text, sentences):
    assert split_sentences(text) == sentences


def test_a_long_sentence_is_cut_at_its_clauses_then_between_words():
    assert split_long("Short enough.", 20) == ["Short enough."]
    assert split_long("one, two; three: four", 10) == ["one, two;", "three:", "four"]
    pieces = split_long("a clause far too long to fit in the limit, then short", 15)
    assert pieces == ["a clause far", "too long to fit", "in the limit,", "then short"]
    assert all(len(piece) <= 15 for piece in pieces)
    assert split_long("unbreakablewordthatislong and more", 10) == ["unbreakablewordthatislong", "and more"]


def test_the_length_may_be_counted_in_other_units():
    # e.g. the symbols a text front-end makes of a piece: "3" says "three"
    spoken = {"3": "three"}.get
    length = lambda text: sum(len(spoken(word) or word) + 1 for word in text.split()) - 1  # noqa: E731
    assert split_long("3 3 3 3", 11, length) == ["3 3", "3 3"]
    assert split_long("3 3 3 3", 11) == ["3 3 3 3"]
