"""The letter dictionary: fairseq's special symbols first, the word boundary found by name, labels to indices and
back, and every mistake in a dict.ltr.txt named by file and line."""
import pytest

from common.errors import UserError, UserFileNotFoundError
from wav2vec2.dictionary import Dictionary, UnknownSymbolError, words_to_letters

# LibriSpeech's dict.ltr.txt as fairseq's generate_dictionary writes it (sorted by count).
LIBRISPEECH_SYMBOLS = "| E T A O N I H S R D L U M W C F G Y P B V K ' X J Q Z".split()


@pytest.fixture()
def librispeech_dict(tmp_path):
    path = tmp_path / "dict.ltr.txt"
    path.write_text("".join(f"{symbol} {1000 - i}\n" for i, symbol in enumerate(LIBRISPEECH_SYMBOLS)))
    return path


def test_special_symbols_come_first_then_the_files_symbols_in_order(librispeech_dict):
    dictionary = Dictionary.load(librispeech_dict)
    assert len(dictionary) == 32  # the output size of fairseq's LibriSpeech CTC models
    assert dictionary.symbols_with_specials[:4] == ["<s>", "<pad>", "</s>", "<unk>"]
    assert (dictionary.blank_index, dictionary.pad_index, dictionary.eos_index, dictionary.unk_index) == (0, 1, 2, 3)
    assert dictionary.symbols == LIBRISPEECH_SYMBOLS
    assert dictionary.index("|") == 4 and dictionary.index("E") == 5 and dictionary.index("Z") == 31
    assert dictionary.symbol(31) == "Z"
    assert dictionary.word_boundary_index == 4


def test_the_word_boundary_is_found_by_name_not_by_frequency(tmp_path):
    path = tmp_path / "dict.ltr.txt"
    path.write_text("E 900\nT 800\n| 10\nH 5\n")  # '|' is not the most frequent symbol here
    dictionary = Dictionary.load(path)
    assert dictionary.word_boundary_index == 6
    assert dictionary.decode([7, 4, 6, 5, 7, 6]) == "HE TH"


def test_letters_encode_and_decode_as_fairseq_labels(librispeech_dict):
    dictionary = Dictionary.load(librispeech_dict)
    assert words_to_letters("HI THERE") == "H I | T H E R E |"
    assert words_to_letters("  IT'S  ") == "I T ' S |"
    ids = dictionary.encode_letters("H I | T H E R E |")
    assert ids == [dictionary.index(s) for s in "H I | T H E R E |".split()]
    assert dictionary.encode_words("HI THERE") == ids
    assert dictionary.decode(ids) == "HI THERE"
    # Special symbols are left out; runs of boundaries and the ends' boundaries collapse.
    assert dictionary.decode([0, 4, 4] + ids[:2] + [1, 4, 4, 4] + ids[3:] + [2, 3]) == "HI THERE"
    assert dictionary.decode_letters([0] + ids + [1]) == "H I | T H E R E |"
    assert dictionary.decode([]) == ""
    with pytest.raises(UnknownSymbolError, match="'7' is not in the dictionary") as caught:
        dictionary.encode_letters("A 7 |")
    assert caught.value.symbol == "7"


def test_a_checkpoint_carries_the_dictionary(librispeech_dict, tmp_path):
    dictionary = Dictionary.load(librispeech_dict)
    restored = Dictionary.from_dict(dictionary.to_dict())
    assert restored == dictionary and restored.word_boundary_index == 4
    assert dictionary.to_dict()["symbols"][:5] == ["<s>", "<pad>", "</s>", "<unk>", "|"]
    dictionary.save(tmp_path / "saved.txt")
    assert Dictionary.load(tmp_path / "saved.txt") == dictionary
    with pytest.raises(ValueError, match="does not start with the special symbols"):
        Dictionary.from_dict({"symbols": ["|", "A"]})


@pytest.mark.parametrize("text, message", [
    ("| 10\nA\n", r"dict.ltr.txt:2: expected '<symbol> <count>', found 'A'"),
    ("| 10\nA ten\n", r"dict.ltr.txt:2: expected '<symbol> <count>'"),
    ("| 10\nA 3 4\n", r"dict.ltr.txt:2: expected '<symbol> <count>'"),
    ("| 10\nA 3\n\nA 2\n", r"dict.ltr.txt:4: symbol 'A' already appears on line 2"),
    ("<pad> 3\n| 10\n", r"dict.ltr.txt:1: <pad> is one of the special symbols"),
    ("\n\n", r"dict.ltr.txt: the dictionary lists no symbols"),
])
def test_mistakes_in_the_file_name_it_and_the_line(tmp_path, text, message):
    path = tmp_path / "dict.ltr.txt"
    path.write_text(text)
    with pytest.raises(UserError, match=message):
        Dictionary.load(path)


def test_a_missing_file_and_a_missing_word_boundary_are_named(tmp_path):
    with pytest.raises(UserFileNotFoundError, match="dictionary not found: .*nowhere.txt"):
        Dictionary.load(tmp_path / "nowhere.txt")
    path = tmp_path / "dict.ltr.txt"
    path.write_text("A 3\nB 2 #fairseq:overwrite\n")
    dictionary = Dictionary.load(path)
    assert dictionary.symbols == ["A", "B"]
    with pytest.raises(UserError, match=r"dict.ltr.txt has no word boundary symbol '\|'"):
        dictionary.decode([4, 5])
