import argparse
import json
import logging
import pickle

import pytest
import torch

from common.arguments import add_dataclass_args
from common.errors import UserError
from common.text import TextProcessor, TextSettings, read_symbols_file, symbols_of_transcripts
from common.text.cleaners import basic_cleaners, english_cleaners, get_cleaner, transliteration_cleaners
from common.text.numbers import normalize_numbers
from common.text.symbols import SYMBOLS

# Ids worked out by hand from the published table: 64 + position in the alphabetical CMU phoneme list.
HH, AW1, S = 106, 82, 131


def ids_of(text):
    return [SYMBOLS.index(character) for character in text]


# ---------------------------------------------------------------------------------------------------------------
# Symbols


def test_symbol_table_matches_nvidia_ids():
    assert len(SYMBOLS) == 148
    assert len(set(SYMBOLS)) == 148
    expected_ids = {"_": 0, "-": 1, "!": 2, "'": 3, "(": 4, ")": 5, ",": 6, ".": 7, ":": 8, ";": 9, "?": 10, " ": 11,
                    "A": 12, "Z": 37, "a": 38, "z": 63, "@AA": 64, "@AA0": 65, "@AW1": AW1, "@B": 88, "@HH": HH,
                    "@S": S, "@ZH": 147}
    assert {symbol: SYMBOLS.index(symbol) for symbol in expected_ids} == expected_ids
    phonemes = [symbol for symbol in SYMBOLS if symbol.startswith("@")]
    assert len(phonemes) == 84
    assert sum(phoneme[-1] in "012" for phoneme in phonemes) == 45  # 15 vowels x 3 stress marks


# ---------------------------------------------------------------------------------------------------------------
# Numbers


@pytest.mark.parametrize("text, spoken", [
    ("in 1995", "in nineteen ninety-five"),
    ("in 2005", "in two thousand five"),
    ("in 2000", "in two thousand"),
    ("in 1900", "in nineteen hundred"),
    ("in 1905", "in nineteen oh five"),
    ("in 2010", "in twenty ten"),
    ("1000 and 3000", "one thousand and three thousand"),  # outside 1000 < n < 3000: not years
    ("the 1st and the 23rd", "the first and the twenty-third"),
    ("the 101st", "the one hundred first"),
    ("$1", "one dollar"),
    ("$5", "five dollars"),
    ("$2.50", "two dollars, fifty cents"),
    ("$1.01", "one dollar, one cent"),
    ("$0.05", "five cents"),
    ("$1.5", "one dollar, fifty cents"),
    ("$0", "zero dollars"),
    ("£1 or £20", "one pound or twenty pounds"),
    ("£2.50 and £1.01", "two pounds, fifty pence and one pound, one penny"),
    ("\u20ac5.50, 5 \u20ac, 5\u20ac and \u20ac0.99",
     "five euros, fifty cents, five euros, five euros and ninety-nine cents"),
    ("\u00a5100 and 5\u00a2", "one hundred yen and five cents"),
    ("$2.5 billion", "two point five billion dollars"),
    ("$5m, $5k, $3bn and \u20ac3 mn",
     "five million dollars, five thousand dollars, three billion dollars and three million euros"),
    ("$2 b", "two dollars b"),  # a letter apart from the amount is not its magnitude
    # A country's dollar, a minus sign on either side of the currency's, a range of money, and a sign alone.
    ("US$5, US$2.5 billion and A$20.50",
     "five u s dollars, two point five billion u s dollars and twenty australian dollars, fifty cents"),
    ("-$5, $-5 and -\u00a32.50", "minus five dollars, minus five dollars and minus two pounds, fifty pence"),
    ("$5-10 or \u00a31.50-\u00a32", "five dollars to ten dollars or one pound, fifty pence to two pounds"),
    ("the \u00a3 sign, the $ symbol, prices in $ or \u20ac, \u00a5 and \u00a2",
     "the pound sign, the dollar symbol, prices in dollars or euros, yen and cents"),
    ("$HOME, #$^ and (\u00a3)", "$HOME, #$^ and (pounds)"),  # a sign in a word or among symbols is not alone
    ("5 $", "five dollars"),  # a sign alone after an amount is its currency's name too
    ("3.14", "three point one four"),
    ("0.5", "zero point five"),
    ("1,234,567", "one million, two hundred thirty-four thousand, five hundred sixty-seven"),
    ("$1,000,000", "one million dollars"),
    # A number with a thousands comma is a count, not a year, and so is an amount of money; whole hundreds and
    # ranges are read as before.
    ("1,250 people and 1,005 votes", "one thousand two hundred fifty people and one thousand five votes"),
    ("the year 1250, in 1905", "the year twelve fifty, in nineteen oh five"),
    ("$1,250, $1905 and \u00a31,005.50",
     "one thousand two hundred fifty dollars, one thousand nine hundred five dollars and one thousand five pounds, "
     "fifty pence"),
    ("1,500 fans paid $1500", "fifteen hundred fans paid fifteen hundred dollars"),
    ("the 1,001st night, 1,250.5 grams", "the one thousand first night, one thousand two hundred fifty point five grams"),
    ("1,250-1,300 people", "twelve fifty to thirteen hundred people"),
    ("123", "one hundred twenty-three"),
    ("42 cats", "forty-two cats"),
    # Fractions: proper, with a denominator up to ten; a date, "24/7" or "3/2" is left to the slash.
    ("1/2 cup", "one half cup"),
    ("3/4 of them", "three quarters of them"),
    ("2/3", "two thirds"),
    ("1/10", "one tenth"),
    ("5/8 inch", "five eighths inch"),
    ("1 1/2 hours", "one and a half hours"),
    ("2 3/4", "two and three quarters"),
    ("24/7", "twenty-four/seven"),
    ("3/2", "three/two"),
    ("1/12", "one/twelve"),
    ("1/2/2025/x", "one/two/twenty twenty-five/x"),
    ("\u00bd cup", " one half cup"),
    ("1\u00bd hours", "one and a half hours"),
    ("\u215b inch", " one eighth inch"),
    # Times of day, decades, number signs and minus signs.
    ("at 3:30 pm", "at three thirty pee em"),
    ("9:05", "nine oh five"),
    ("10:00", "ten o'clock"),
    ("14:00", "fourteen hundred"),
    ("10:30:15", "ten:thirty:fifteen"),
    ("the 1990s", "the nineteen nineties"),
    ("1990's", "nineteen nineties"),
    ("the '80s", "the eighties"),
    ("in their 20s", "in their twenties"),
    ("the 1900s", "the nineteen hundreds"),
    ("1995s", "nineteen ninety-fives"),
    ("#1 fan", "number one fan"),
    ("No. 5", "number five"),
    ("no. it is", "no. it is"),
    ("-5 or \u22123", "minus five or minus three"),
    ("5-10 covid-19", "five to ten covid-nineteen"),
    ("1990-1995 and 3-2", "nineteen ninety to nineteen ninety-five and three to two"),
    # Dates written year-month-day and telephone numbers; an id such as "LJ001-0001" is neither.
    ("on 2026-12-03", "on december third, twenty twenty-six"),
    ("1999-01-31", "january thirty-first, nineteen ninety-nine"),
    ("2026-13-03", "twenty twenty-six-thirteen-three"),
    ("call 555-0123", "call five five five, zero one two three"),
    ("212-555-0123", "two one two, five five five, zero one two three"),
    ("LJ001-0001", "LJone-one"),
    ("on Jan. 5, 2026, May 5 and Dec 25th", "on january fifth, twenty twenty-six, may fifth and december twenty-fifth"),
    ("you may 5 times in May 2026", "you may five times in May twenty twenty-six"),  # a verb; a month and a year
    # Roman numerals where their reading is clear.
    ("Henry VIII, Elizabeth II and Louis XIV", "Henry the eighth, Elizabeth the second and Louis the fourteenth"),
    ("World War II, World War I, Chapter XLIX, Act V", "World War two, World War one, Chapter forty-nine, Act five"),
    ("Henry I am, George MIX, Henry VIIII, Super Bowl LVIII", "Henry I am, George MIX, Henry VIIII, Super Bowl LVIII"),
    ("12/03/2026 and 1/2/2025", "december third, twenty twenty-six and january second, twenty twenty-five"),
    ("13/03/2026", "thirteen/three/twenty twenty-six"),  # no thirteenth month: left to the slash
    ("1-800-555-0123", "one, eight hundred, five five five, zero one two three"),
    ("(212) 555-0123", "two one two, five five five, zero one two three"),
    ("1-800 numbers", "one eight hundred numbers"),
    # Ten digits or more, not an amount: digit by digit, in groups.
    ("card 4111111111111111", "card four one one one, one one one one, one one one one, one one one one"),
    ("call 5551234567", "call five five five, one two three, four five six seven"),
    ("1,234,567,890", "one billion, two hundred thirty-four million, five hundred sixty-seven thousand, eight hundred "
                      "ninety"),
    ("$10000000000", "ten billion dollars"),
    # Units after a number, "x", and a time's am and pm; a unit's full stop is read past unless a sentence follows.
    ("100 km and 1 km", "one hundred kilometers and one kilometer"),
    ("2.5 kg, 60 mph, 100 km/h", "two point five kilograms, sixty miles per hour, one hundred kilometers per hour"),
    ("1.5 GB in 20 ms", "one point five gigabytes in twenty milliseconds"),
    ("6 ft. tall", "six feet tall"),
    ("6 ft. Then", "six feet. Then"),
    ("the km and 5 m", "the km and five m"),  # "m" is metres, minutes or millions: left
    ("2x faster, a 4x4, 1920 x 1080", "two times faster, a four by four, nineteen twenty by ten eighty"),
    ("5pm, 3:30 a.m. and 10 AM", "five pee em, three thirty ay em and ten ay em"),
    ("at 5 p.m. We left", "at five pee em. We left"),
    ("in 1995 a man", "in nineteen ninety-five a man"),
])
def test_normalize_numbers(text, spoken):
    assert normalize_numbers(text) == spoken


# ---------------------------------------------------------------------------------------------------------------
# Cleaners


@pytest.mark.parametrize("text, cleaned", [
    ("Mrs. Smith", "misess smith"), ("Mr. Smith", "mister smith"), ("Dr. Who", "doctor who"),
    ("Drs. Who", "doctors who"), ("St. Louis", "saint louis"), ("Acme Co.", "acme company"),
    ("John Jr.", "john junior"), ("Maj. Gen. Lee", "major general lee"),
    ("Rev. Lt. Hon. X", "reverend lieutenant honorable x"), ("Sgt. Capt. Col. X", "sergeant captain colonel x"),
    ("Y Esq. Z Ltd.", "y esquire z limited"), ("Ft. Worth", "fort worth"),
])
def test_english_cleaners_expand_abbreviations(text, cleaned):
    assert english_cleaners(text) == cleaned


@pytest.mark.parametrize("text, cleaned", [
    ("Tuesday, Dec. 4th", "tuesday, december fourth"),
    ("Prof. Lee climbed Mt. Everest, approx. 5 times", "professor lee climbed mount everest, approximately five times"),
    ("see Fig. 3 of Vol. 2 from the Dept. of Energy", "see figure three of volume two from the department of energy"),
    ("Mr Smith, Mrs Brown and Dr Jones", "mister smith, mrs brown and doctor jones"),  # titles without a full stop
    ("the Dr said", "the dr said"),  # before a name only
    ("a fig. that was apt.", "a fig. that was apt."),  # "Fig." and "Apt." only before a number
])
def test_english_cleaners_expand_everyday_abbreviations(text, cleaned):
    assert english_cleaners(text) == cleaned


def test_abbreviations_need_their_full_stop():
    assert english_cleaners("the dr said st") == "the dr said st"


def test_english_cleaners_whole_sentence():
    text = "Dr.  Smith paid $3.50\ton   the 2nd of May, 1887."
    spoken = "doctor smith paid three dollars, fifty cents on the second of may, eighteen eighty-seven."
    assert english_cleaners(text) == spoken


def test_english_cleaners_read_pounds_before_transliterating_them():
    assert english_cleaners("It cost £3.") == "it cost three pounds."


def test_transliteration():
    assert english_cleaners("Café") == "cafe"
    assert english_cleaners("Beijing (北京), THE 2ND") == "beijing (bei jing ), the second"  # lowercase after ASCII
    assert transliteration_cleaners("  Crème   Brûlée ") == " creme brulee "
    assert transliteration_cleaners("ja\u2014nein \u2014") == "ja, nein "  # a pause between words, dropped at the end
    assert basic_cleaners("Café  AU\nlait") == "café au lait"  # no transliteration


def test_unknown_cleaner_name_lists_the_valid_ones():
    valid = "basic_cleaners, english_cleaners, english_cleaners_arpabet, transliteration_cleaners"
    with pytest.raises(ValueError, match=f"'english_cleaner'.*{valid}"):
        TextProcessor(["english_cleaner"])
    with pytest.raises(ValueError, match="valid names"):
        get_cleaner("nope")


def test_cli_flag_resolves_cleaner_names():
    parser = argparse.ArgumentParser()
    add_dataclass_args(parser, TextSettings)
    assert parser.parse_args([]).text_cleaners == ["english_cleaners"]
    args = parser.parse_args(["--text-cleaners", "basic_cleaners"])
    assert TextProcessor(args.text_cleaners).cleaner_names == ["basic_cleaners"]
    with pytest.raises(SystemExit):
        parser.parse_args(["--text-cleaners", "english"])


# ---------------------------------------------------------------------------------------------------------------
# TextProcessor


def test_encode_decode_round_trip():
    processor = TextProcessor()
    ids = processor.encode("Hello, World!")
    assert ids == ids_of("hello, world!")
    assert processor.decode(ids) == "hello, world!"
    assert processor.decode(torch.tensor([0] + ids + [0, 0])) == "hello, world!"  # padding is skipped
    assert processor.n_symbols == 148


def test_trailing_whitespace_is_stripped():
    processor = TextProcessor()
    assert processor.encode("  Hello there. \n") == ids_of("hello there.")
    assert processor.clean("Hello there. \n") == "hello there."


def test_arpabet_in_braces():
    processor = TextProcessor()
    ids = processor.encode("Turn left on {HH AW1 S} street.")
    assert ids == ids_of("turn left on ") + [HH, AW1, S] + ids_of(" street.")
    assert processor.decode(ids) == "turn left on {HH AW1 S} street."
    assert processor.clean("On {hh aw1 s} St. now") == "on {HH AW1 S} saint now."  # a line ends as a sentence
    assert processor.encode(processor.decode(ids)) == ids


def test_unknown_character_is_logged_once_with_source_and_counted(caplog):
    processor = TextProcessor(["basic_cleaners"])  # english_cleaners would transliterate U+200B to nothing
    with caplog.at_level(logging.WARNING, logger="common.text"):
        ids = processor.encode('She said "hi"\u200b.', source="filelists/x.txt:12")
        processor.encode('"Again"', source="filelists/x.txt:13")
    assert ids == ids_of("she said hi.")
    messages = [record.getMessage() for record in caplog.records if record.name == "common.text"]
    assert len(messages) == 2  # one per distinct character, not per occurrence
    quote = next(message for message in messages if "U+0022" in message)
    assert "filelists/x.txt:12" in quote and "'\"'" in quote
    zero_width = next(message for message in messages if "U+200B" in message)
    assert "'\\u200b'" in zero_width
    assert processor.unknown_counts == {'"': 4, "\u200b": 1}


def test_characters_without_transliteration_are_dropped_and_reported(caplog):
    processor = TextProcessor()
    with caplog.at_level(logging.WARNING, logger="common.text"):
        assert processor.encode("ok \U0001F600 then {HH} \U0001F600", source="phrases/a.txt:1") == [
            *ids_of("ok then "), HH, *ids_of(".")]
    assert processor.unknown_counts == {"\U0001F600": 2}
    assert "U+1F600" in caplog.text and "phrases/a.txt:1" in caplog.text
    with pytest.raises(ValueError, match=r"s:2: .*U\+1F600"):
        TextProcessor(strict=True).encode("ok \U0001F600", source="s:2")


# What NVIDIA's english_cleaners give, and so the ids their published Tacotron 2 was trained on: their own
# transliteration table spells o-umlaut "oe" and has no entry for the em dash (read as a comma only between words) or
# emoji, which are dropped before the spaces are collapsed (PyPI unidecode gives "o" and "--").
@pytest.mark.parametrize("text, nvidia_ids_text", [
    ("Schr\u00f6dinger", "schroedinger"),
    ("\u00d6sterreich", "oesterreich"),
    ("wait \u2014", "wait"),
    ("hi \U0001F600 there", "hi there"),
    ("hi \U0001F600\U0001F600  there \u2014", "hi there"),
])
def test_english_cleaners_transliterate_as_nvidia(text, nvidia_ids_text):
    assert TextProcessor().encode(text) == ids_of(nvidia_ids_text + ".")  # and the full stop every line ends with
    assert english_cleaners(text).strip() == nvidia_ids_text


# The symbols that stand for words, which NVIDIA's front-end drops ("50%" read "fifty"), are read as words; the
# ids are then those of NVIDIA's front-end given the words.
@pytest.mark.parametrize("text, words", [
    ("50% off", "fifty percent off"),
    ("Tom & Jerry", "tom and jerry"),
    ("2+2=4", "two plus two equals four"),
    ("write to bob@home", "write to bob at home"),
    ("and/or 24/7", "and or twenty-four seven"),
    ("1/2 off", "one half off"),
    ("yes\u2014no", "yes, no"),  # NVIDIA's: "yesno"
    ("yes \u2014 no \u2014\u2014 maybe", "yes, no, maybe"),
    ("wait\u2026 what\u2026 now", "wait... what... now"),  # NVIDIA's: "wait what now"
    ("5\u00b0C, 1\u00b0 F and 90\u00b0 out", "five degrees celsius, one degree fahrenheit and ninety degrees out"),
    ("\u201cHi,\u201d she said \"ok\"", "hi, she said ok"),  # NVIDIA's: the same ids, with a report of the quotes
    ("see https://www.example.com/about or bob@news.bbc.co.uk", "see w w w dot example dot com about or bob at news "
                                                                "dot bbc dot co dot uk"),
    ("e.g. github.io, not the U.S. one", "for example github dot io, not the u.s. one"),
    ("cats vs. dogs, i.e. pets, etc. and so on", "cats versus dogs, that is pets, et cetera and so on"),
    ("apples, pears, etc. We left", "apples, pears, et cetera. we left"),
])
def test_english_cleaners_read_symbols_as_words(text, words, caplog):
    processor = TextProcessor()
    with caplog.at_level(logging.WARNING, logger="common.text"):
        assert processor.encode(text) == ids_of(words + ".")
    assert english_cleaners(text).strip() == words
    assert not processor.unknown_counts and not caplog.text


def test_pad_symbol_is_never_encoded():
    processor = TextProcessor(["basic_cleaners"])
    assert processor.encode("a_b.") == ids_of("ab.")
    assert processor.unknown_counts == {"_": 1}


def test_unknown_phoneme_is_reported(caplog):
    processor = TextProcessor()
    with caplog.at_level(logging.WARNING, logger="common.text"):
        assert processor.encode("{HH XX1}", source="s:1") == [HH, *ids_of(".")]
    assert "'@XX1'" in caplog.text and "s:1" in caplog.text


def test_strict_mode_raises_naming_characters_and_source():
    processor = TextProcessor(strict=True)
    with pytest.raises(ValueError, match=r"filelists/x\.txt:3: .*'#'.*'\*'"):
        processor.encode("#tag * more", source="filelists/x.txt:3")
    assert not processor.unknown_counts


@pytest.mark.parametrize("text", ["", "   \n", '""'])
def test_empty_transcript_raises_naming_source(text):
    with pytest.raises(ValueError, match=r"filelists/y\.txt:7: "):
        TextProcessor().encode(text, source="filelists/y.txt:7")


def test_dict_round_trip():
    symbols = ["<pad>", *"abc ", "@HH"]
    processor = TextProcessor(["basic_cleaners"], symbols)
    saved = json.loads(json.dumps(processor.to_dict()))
    assert saved == {"cleaners": ["basic_cleaners"], "symbols": symbols}
    restored = TextProcessor.from_dict(saved)
    assert restored.n_symbols == 6
    assert restored.encode("Cab {hh}") == [3, 1, 2, 4, 5]
    assert restored.decode([3, 1, 2, 4, 5, 0]) == "cab {HH}"
    with pytest.raises(ValueError, match="keys"):
        TextProcessor.from_dict({"cleaners": ["basic_cleaners"], "symbols": symbols, "extra": 1})
    with pytest.raises(ValueError, match="valid names"):
        TextProcessor.from_dict({"cleaners": ["gone_cleaners"], "symbols": symbols})


def test_bad_symbol_tables_and_ids_are_errors():
    with pytest.raises(ValueError, match=r"more than once: \['a'\]"):
        TextProcessor(symbols=["_", "a", "b", "a"])
    with pytest.raises(ValueError, match="outside this table of 148"):
        TextProcessor().decode([12, 148])
    with pytest.raises(ValueError, match="outside"):
        TextProcessor().decode([-1])


def test_processor_pickles_for_data_loader_workers():
    processor = TextProcessor()
    copy = pickle.loads(pickle.dumps(processor))
    assert copy.encode("Dr. No, 1962.") == processor.encode("Dr. No, 1962.") == ids_of("doctor no, nineteen sixty-two.")


@pytest.mark.slow
def test_arpabet_cleaner_reads_known_words_as_their_dictionary_phonemes():
    processor = TextProcessor(["english_cleaners_arpabet"])
    # numbers and abbreviations are spelled out first; an unknown word stays letters; braces given stay as they are
    assert processor.clean("Dr. Smith paid $4 for 2 zorblaxes, {HH AW1 S}!") == (
        "{D AA1 K T ER0} {S M IH1 TH} {P EY1 D} {F AO1 R} {D AA1 L ER0 Z} {F AO1 R} {T UW1} zorblaxes, {HH AW1 S}!")
    ids = processor.encode("The river.")
    assert [processor.symbols[i] for i in ids] == ["@DH", "@AH0", " ", "@R", "@IH1", "@V", "@ER0", "."]
    assert processor.decode(ids) == "{DH AH0} {R IH1 V ER0}."
    assert processor.n_symbols == len(SYMBOLS)  # NVIDIA's table holds the phonemes already
    # a checkpoint's processor rebuilt from its dict reads text the same way
    assert TextProcessor.from_dict(processor.to_dict()).encode("The river.") == ids


# ---------------------------------------------------------------------------------------------------------------
# Every line ends as a sentence: a line without a final mark gets the full stop the training text had


@pytest.mark.parametrize("cleaner", ["english_cleaners", "basic_cleaners", "transliteration_cleaners"])
@pytest.mark.parametrize("text, ends_as", [
    ("turn the lights off", "turn the lights off."),
    ("turn the lights off ", "turn the lights off."),
    ("is it raining", "is it raining."),
    ("is it raining?", "is it raining?"),
    ("stop!", "stop!"),
    ("first, then", "first, then."),
    ("a line cut here;", "a line cut here;"),
    ("as in: ", "as in:"),
    ("he said 'go.'", "he said 'go.'"),
    ("he said 'go'", "he said 'go'."),
    ("(an aside)", "(an aside)."),
    ("(an aside.)", "(an aside.)"),
])
def test_a_line_without_a_final_mark_ends_with_a_full_stop_in_every_cleaner(cleaner, text, ends_as):
    processor = TextProcessor([cleaner])
    ids = processor.encode(text)
    assert ids == ids_of(ends_as)
    assert processor.clean(text) == ends_as == processor.decode(ids)


def test_the_full_stop_follows_arpabet_and_dropped_characters():
    processor = TextProcessor()
    assert processor.encode("on {HH AW1 S}") == [*ids_of("on "), HH, AW1, S, *ids_of(".")]
    assert processor.encode("on {HH AW1 S}!") == [*ids_of("on "), HH, AW1, S, *ids_of("!")]
    assert processor.encode("ok. \U0001F600") == ids_of("ok.")  # the emoji is dropped: the line ends at the stop
    assert TextProcessor(["basic_cleaners"]).encode("ok \U0001F600") == ids_of("ok.")  # an unknown symbol


def test_a_table_without_a_full_stop_reads_lines_as_before():
    processor = TextProcessor(["basic_cleaners"], ["_", "a", "b", " "])  # transcripts that never held one
    assert processor.encode("ab ba") == [1, 2, 3, 2, 1]
    assert processor.clean("ab ba") == "ab ba"


@pytest.mark.parametrize("text", ["\U0001F600", '"\u2014"'])
def test_a_line_of_nothing_readable_gets_no_full_stop_and_stays_an_error(text):
    with pytest.raises(ValueError, match="encodes to no symbols"):
        TextProcessor().encode(text, source="s:1")


@pytest.mark.slow
def test_the_arpabet_cleaner_ends_a_line_with_a_full_stop_too():
    processor = TextProcessor(["english_cleaners_arpabet"])
    ids = processor.encode("the river")
    assert [processor.symbols[i] for i in ids] == ["@DH", "@AH0", " ", "@R", "@IH1", "@V", "@ER0", "."]
    assert ids == processor.encode("The river.")


# ---------------------------------------------------------------------------------------------------------------
# Symbol tables of other languages (Tacotron 2's --symbols-file and --symbols-from-filelist)


def test_symbols_of_transcripts_are_the_cleaned_symbols_sorted_after_padding():
    table = symbols_of_transcripts(["  Grüße, {HH AW1}!", "Straße_"], ["basic_cleaners"])
    # "_" in a transcript is not a symbol of its own: id 0 pads, and encode() reports it as unknown. "Straße" ends
    # without a mark, so encode() ends it with a full stop, and the table holds one.
    assert table == ["_", " ", "!", ",", ".", "@AW1", "@HH", "a", "e", "g", "r", "s", "t", "ß", "ü"]
    processor = TextProcessor(["basic_cleaners"], table)
    assert processor.encode("Grüße") == [9, 10, 14, 13, 8, 4]
    assert symbols_of_transcripts(["Grüße!"], ["basic_cleaners"]) == ["_", "!", "e", "g", "r", "ß", "ü"]


def test_a_symbols_file_of_lines_or_json_reads_back_the_table_it_was_written_from(tmp_path):
    table = ["_", " ", "'", "a", "ä", "@AA1"]
    lines, listing = tmp_path / "table.txt", tmp_path / "table.json"
    lines.write_text("".join(f"{symbol}\n" for symbol in table), encoding="utf-8")
    listing.write_text(json.dumps(table), encoding="utf-8")
    assert read_symbols_file(lines) == table == read_symbols_file(listing)
    lines.write_text("_\r\n \r\na", encoding="utf-8")  # Windows line breaks, no line break at the end
    assert read_symbols_file(lines) == ["_", " ", "a"]


@pytest.mark.parametrize("name, content, message", [
    ("t.txt", "", r"--symbols-file .*t.txt is empty"),
    ("t.txt", "_\na\n\n", r"t.txt:3: an empty symbol"),
    ("t.txt", "_\na\nb\na\n", r"t.txt:4: the symbol 'a' is listed twice, first at 2"),
    ("t.txt", "a\n_\n", r"t.txt:1: the first symbol is the padding one \(id 0\), '_', not 'a'"),
    ("t.json", '["_", "a", "a"]', r"t.json entry 3: the symbol 'a' is listed twice, first at 2"),
    ("t.json", '["_", ""]', r"t.json entry 2: an empty symbol"),
    ("t.json", '["_", 7]', r"t.json entry 2: an empty symbol \(7\)"),
    ("t.json", '{"a": 1}', r"t.json: expected a JSON list of symbols, found a dict"),
    ("t.json", '["_",', r"t.json:1: not valid JSON"),
])
def test_a_bad_symbols_file_is_a_user_error_naming_the_file_and_line(name, content, message, tmp_path):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UserError, match=message):
        read_symbols_file(path)


def test_a_missing_symbols_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="--symbols-file .*absent.txt: no such file"):
        read_symbols_file(tmp_path / "absent.txt")


@pytest.mark.parametrize("text, without", [
    ("the end.", "the end"),
    ("is it?!", "is it"),
    ("(an aside.)", "(an aside)"),
    ("he said 'go.'", "he said 'go'"),
    ("no mark", "no mark"),  # the full stop encode() gave it goes
    ("don't", "don't"),
    ("...", "..."),  # nothing but marks: left as it is
])
def test_without_final_mark_leaves_out_the_marks_that_end_a_line(text, without):
    processor = TextProcessor()
    assert processor.decode(processor.without_final_mark(processor.encode(text))) == without
