"""Spell out numbers, money, ordinals and years so that the models only ever see words.

Follows the normalisation NVIDIA's Tacotron 2 was trained with ("1995" -> "nineteen ninety-five", no "and" inside
numbers), with these readings made right:
- cents are what the digits after the point say ("$1.5" is fifty cents, not five), and pence too ("\u00a32.50" is
  "two pounds, fifty pence"); euros and yen are read ("\u20ac5", "5 \u20ac", "\u00a5100"), and so is an amount with
  its magnitude ("$2.5 billion", "$5m" -> "two point five billion dollars", "five million dollars");
- the digits after a decimal point are read one by one ("3.14" -> "three point one four");
- a fraction is read as one ("3/4" and "\u00be" -> "three quarters", "1 1/2" -> "one and a half");
- a time of day is read as one ("3:30" -> "three thirty", "9:05" -> "nine oh five", "10:00" -> "ten o'clock");
- a decade is a plural ("the 1990s" -> "the nineteen nineties", "the '80s" -> "the eighties");
- a date is read as one, written year-month-day or month/day/year as in the United States ("2026-12-03" and
  "12/03/2026" -> "december third, twenty twenty-six"), and a day after a month is its ordinal ("May 5" -> "May
  fifth");
- a run of ten digits or more is read digit by digit in groups ("4111111111111111" -> "four one one one, one one one
  one, ...");
- a telephone number is read digit by digit ("555-0123" -> "five five five, zero one two three"; "1-800-555-0123"
  and "(800) 555-0123" begin "one, eight hundred" and "eight hundred");
- a range is read with "to" ("5-10" -> "five to ten"), a hyphen inside a word stays ("covid-19");
- an "x" after a number is "by" or "times" ("3x4" -> "three by four", "2x faster" -> "two times faster");
- a unit after a number is its word ("100 km" -> "one hundred kilometers", "1 kg" -> "one kilogram", "60 mph" ->
  "sixty miles per hour"), and so is a time of day's "am" and "pm" ("5 p.m." -> "five pee em");
- a number sign is "number" ("#1" and "No. 5" -> "number one", "number five"), a minus sign "minus" ("-5"), and
  "Fig. 3", "Apt. 5" and "Vol. 2" are "figure three", "apartment five", "volume two";
- a roman numeral is a monarch's ordinal or a count where that is clear ("Henry VIII" -> "Henry the eighth", "World
  War II" -> "World War two").
"""
from __future__ import annotations

import functools
import re
import unicodedata
from fractions import Fraction

_NUMBER_WITH_COMMAS = re.compile(r"[0-9][0-9,]+[0-9]")
# Ten digits or more in one run, not an amount (no commas, no currency sign, no decimal point): an account, card or
# telephone number, read digit by digit in groups ("4111111111111111" is not "four quadrillion ...").
_LONG_DIGIT_RUN = re.compile(r"(?<![0-9,.$\u00a3\u20ac\u00a5])[0-9]{10,}(?![0-9,]|\.[0-9])")
# Money: a currency sign before an amount ("$5", "£2.50", "€0.99", "$2.5 billion", "$5m"), or the euro's or the
# cent's after it ("5 €", "5¢").
# Each sign's unit and its hundredth, singular and plural; the yen has none.
_CURRENCIES = {"$": ("dollar", "dollars", "cent", "cents"), "\u00a3": ("pound", "pounds", "penny", "pence"),
               "\u20ac": ("euro", "euros", "cent", "cents"), "\u00a5": ("yen", "yen", None, None)}
_MAGNITUDE_LETTERS = {"k": "thousand", "m": "million", "mn": "million", "b": "billion", "bn": "billion"}
# A country's dollar ("US$5", "A$20"): its name said before "dollars".
_DOLLAR_COUNTRIES = {"US": "u s", "A": "australian", "C": "canadian", "NZ": "new zealand", "HK": "hong kong"}
_MONEY = re.compile(r"(?:\b((?-i:US|A|C|NZ|HK))(?=\$))?([$\u00a3\u20ac\u00a5]) ?([0-9.]*[0-9])"
                    r"(?: ?(thousand|million|billion|trillion|mn|bn)\b|(k|m|b)\b)?", re.IGNORECASE)
# Around money: a range ("$5-10", "$5-$10": "$5 to $10"), a minus sign before or after the currency's ("-$5", "$-5":
# "minus $5"), and a sign standing alone as a word ("the £ sign", "prices in $."), read as the currency's name.
_MONEY_RANGE = re.compile(r"([$\u00a3\u20ac\u00a5])([0-9][0-9.]*)-\1?(?=[0-9])")
_MINUS_BEFORE_MONEY = re.compile(r"(?<![\w.-])[-\u2212](?=(?:US|A|C|NZ|HK)?[$\u00a3\u20ac\u00a5] ?[0-9])")
_MINUS_AFTER_MONEY = re.compile(r"([$\u00a3\u20ac\u00a5])[-\u2212](?=[0-9])")
_CURRENCY_SIGN_ALONE = re.compile(r"(?<![^\s(])([$\u00a3\u20ac\u00a5\u00a2])(?=[\s.,;:!?)]|$)( (?:sign|symbol)\b)?")
_MONEY_SIGN_AFTER = re.compile(r"(?<![\w.])([0-9.]*[0-9]) ?([\u20ac\u00a2])")  # the signs written after it
_DECIMAL = re.compile(r"([0-9]+)\.([0-9]+)")
_ORDINAL = re.compile(r"([0-9]+)(?:st|nd|rd|th)", re.IGNORECASE)
_INTEGER = re.compile(r"[0-9]+")
# A proper fraction with a denominator up to ten, optionally after a whole number ("1 1/2"); not part of a date or a
# path ("1/2/2025", "24/7" are left to the slash, which parts the numbers).
_FRACTION = re.compile(r"(?<![0-9/.])(?:([0-9]+) )?([0-9])/([0-9]|10)(?![0-9/])")
# The one-character fractions of Unicode ("\u00bd", "\u215b"), written out as digits for _FRACTION to read.
_FRACTION_CHARACTER = re.compile("[\u00bc-\u00be\u2150-\u215e]")
# Hours and minutes, not part of a longer run of numbers and colons ("10:30:15" is left alone).
_TIME_OF_DAY = re.compile(r"(?<![0-9:])([01]?[0-9]|2[0-3]):([0-5][0-9])(?![0-9:])")
# "1990s", "1990's", "'80s", "20s": two or four digits ending in 0, then s.
_DECADE = re.compile(r"(?<![0-9.])'?([0-9]{2}(?:[0-9]{2})?)'?s\b")
_ISO_DATE = re.compile(r"(?<![\w-])([12][0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])(?![0-9-])")
# Month/day/year with a four-digit year ("12/03/2026", "1/2/2025"); not a run of more slashes or a path.
_SLASH_DATE = re.compile(r"(?<![\w/.])(0?[1-9]|1[0-2])/(0?[1-9]|[12][0-9]|3[01])/([12][0-9]{3})(?![\w/])")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
# A day after a month's name or its abbreviation, capitalised ("May 5", "Jan. 5", "Dec 25th": the fifth, the
# twenty-fifth; "may 5" is a verb's).
_MONTH_DAY = re.compile(r"\b(" + "|".join(month.capitalize() for month in _MONTHS)
                        + r"|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.? ([1-9]|[12][0-9]|3[01])"
                        r"(?:st|nd|rd|th)?(?![\w:-]|\.[0-9])")
# "555-0123", "212-555-0123", "(212) 555-0123", "1-800-555-0123": groups of three and four digits, not part of a
# longer run of digits and hyphens.
_TELEPHONE = re.compile(r"(?<![\w-])(?:(1)-(?=[0-9]{3}-))?(?:\(([0-9]{3})\) ?|([0-9]{3})-)?([0-9]{3})-([0-9]{4})"
                        r"(?![0-9-])")
# Area codes said as a number, not digit by digit: the toll-free "eight hundred".
_AREA_CODES_SAID_AS_NUMBERS = {"800"}
# The toll-free prefix on its own ("1-800 numbers"), not a range.
_TOLL_FREE_PREFIX = re.compile(r"(?<![\w-])1-800(?![0-9])")
# Two numbers joined by a hyphen ("5-10", "1990-1995", "3-2"), not inside a word or an id ("covid-19", "LJ001-0001").
_RANGE = re.compile(r"(?<![\w.-])([0-9]+)-([0-9]+)(?![\w.-])")
_NUMBER_SIGN = re.compile(r"(?:#|\bno\. ?)(?=[0-9])", re.IGNORECASE)
# Abbreviations that are also words ("a fig.", "that was apt."), read as theirs only before a number ("Fig. 3").
_ABBREVIATIONS_BEFORE_NUMBERS = re.compile(r"\b(fig|apt|vol)\. ?(?=[0-9])", re.IGNORECASE)
_ABBREVIATED_WORDS = {"fig": "figure ", "apt": "apartment ", "vol": "volume "}
# Units after a number, each as (singular, plural). Letters that mean more than one thing after a number ("m":
# metres, minutes or millions; "in", "g", "l") are left as they are.
_UNIT_WORDS = {
    "km/h": ("kilometer per hour", "kilometers per hour"), "kph": ("kilometer per hour", "kilometers per hour"),
    "mph": ("mile per hour", "miles per hour"),
    "km": ("kilometer", "kilometers"), "cm": ("centimeter", "centimeters"), "mm": ("millimeter", "millimeters"),
    "ft": ("foot", "feet"), "kg": ("kilogram", "kilograms"), "mg": ("milligram", "milligrams"),
    "lb": ("pound", "pounds"), "lbs": ("pound", "pounds"), "oz": ("ounce", "ounces"), "ml": ("milliliter",
    "milliliters"), "kb": ("kilobyte", "kilobytes"), "mb": ("megabyte", "megabytes"), "gb": ("gigabyte",
    "gigabytes"), "tb": ("terabyte", "terabytes"), "hz": ("hertz", "hertz"), "khz": ("kilohertz", "kilohertz"),
    "mhz": ("megahertz", "megahertz"), "ghz": ("gigahertz", "gigahertz"), "kw": ("kilowatt", "kilowatts"),
    "kwh": ("kilowatt hour", "kilowatt hours"), "ms": ("millisecond", "milliseconds"), "sec": ("second", "seconds"),
    "secs": ("second", "seconds"), "min": ("minute", "minutes"), "mins": ("minute", "minutes"),
    "hr": ("hour", "hours"), "hrs": ("hour", "hours"),
}
# The full stop of an abbreviation ("6 ft. tall", "5 p.m. on"), read past unless a new sentence follows it.
_ABBREVIATION_STOP = r"(?:\.(?!\s+(?-i:[A-Z])))?"
_UNIT = re.compile(r"(?<![\w.])([0-9][0-9.]*) ?("
                   + "|".join(sorted(map(re.escape, _UNIT_WORDS), key=len, reverse=True))
                   + r")(?![\w/])" + _ABBREVIATION_STOP, re.IGNORECASE)
# "am" and "pm" after a time or an hour ("5pm", "3:30 a.m."), read as their letters: written as the words for the
# letters, because "a" alone is read "uh" (by the CMU dictionary too) and "p" alone may be read as its sound.
_AM_PM = re.compile(r"(?<=[0-9]) ?([ap])\.?m\b" + _ABBREVIATION_STOP, re.IGNORECASE)
# "x" after a number: "by" between two numbers ("3x4", "1920 x 1080"), "times" before a word or the end ("2x faster").
_BY = re.compile(r"(?<=[0-9]) ?x ?(?=[0-9])")
_TIMES = re.compile(r"(?<![\w.])([0-9][0-9.]*)x\b")
# Roman numerals where their reading is clear: a monarch's or a pope's ordinal ("Henry VIII" -> "Henry the eighth")
# and a number after a word that counts ("World War II", "Chapter IV" -> "World War two", "Chapter four"). Elsewhere
# a capital "I" is the pronoun and "MIX" a word, so they are left.
_ROMAN = "(?=[MDCLXVI])M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})"
_REGNAL_NAMES = ("Henry|Elizabeth|Louis|George|Edward|Charles|William|James|Richard|Mary|Philip|Frederick|Peter|"
                 "Catherine|Alexander|Nicholas|Pius|Leo|Benedict|Gregory|John Paul|Innocent|Clement|Ramesses|Napoleon")
_REGNAL = re.compile(rf"\b({_REGNAL_NAMES}) ({_ROMAN})\b")
_COUNTING_WORDS = "World War|Chapter|Part|Volume|Book|Act|Scene|Phase|Level|Stage|Season|Episode|Article|Title|Type"
_COUNTED = re.compile(rf"\b({_COUNTING_WORDS}) ({_ROMAN})\b")
# A minus sign at the start of a number ("-5", "\u22125"), not a hyphen between numbers or words ("5-10", "covid-19").
_MINUS = re.compile(r"(?<![\w.-])[-\u2212](?=[0-9])")


def normalize_numbers(text: str) -> str:
    """Replace every number in text by words. The order matters: money before decimals before integers."""
    text = _LONG_DIGIT_RUN.sub(_spell_long_digit_run, text)
    text = _REGNAL.sub(_spell_regnal, text)
    text = _COUNTED.sub(_spell_counted, text)
    text = _NUMBER_WITH_COMMAS.sub(_number_without_commas, text)
    text = _ISO_DATE.sub(lambda match: _spoken_date(*match.groups()), text)
    text = _SLASH_DATE.sub(lambda match: _spoken_date(match.group(3), match.group(1), match.group(2)), text)
    text = _TELEPHONE.sub(_spell_telephone, text)
    text = _MONTH_DAY.sub(_spell_month_day, text)
    text = _TOLL_FREE_PREFIX.sub("one eight hundred", text)
    text = _MONEY_RANGE.sub(r"\1\2 to \1", text)
    text = _RANGE.sub(r"\1 to \2", text)
    text = _FRACTION_CHARACTER.sub(_fraction_in_digits, text)
    text = _FRACTION.sub(_spell_fraction, text)
    text = _AM_PM.sub(lambda match: " ay em" if match.group(1) in "aA" else " pee em", text)
    text = _TIME_OF_DAY.sub(_spell_time_of_day, text)
    text = _DECADE.sub(_spell_decade, text)
    text = _NUMBER_SIGN.sub("number ", text)
    text = _ABBREVIATIONS_BEFORE_NUMBERS.sub(lambda match: _ABBREVIATED_WORDS[match.group(1).lower()], text)
    text = _UNIT.sub(_spell_unit, text)
    text = _BY.sub(" by ", text)
    text = _TIMES.sub(r"\1 times", text)
    text = _MINUS_BEFORE_MONEY.sub("minus ", text)
    text = _MINUS_AFTER_MONEY.sub(r"minus \1", text)
    text = _MINUS.sub("minus ", text)
    text = _MONEY_SIGN_AFTER.sub(_spell_money_sign_after, text)
    text = _MONEY.sub(_spell_money, text)
    text = _DECIMAL.sub(_spell_decimal, text)
    text = _ORDINAL.sub(lambda match: _ordinal_words(int(match.group(1))), text)
    text = _CURRENCY_SIGN_ALONE.sub(_spell_currency_sign, text)
    return _INTEGER.sub(_spell_integer, text)


def _count_digits(number: int) -> str:
    """A count's digits for the integer pass, which reads 1001 to 2999 as a year ("twelve fifty", "ten oh five"): so
    there, unless a whole hundred ("fifteen hundred"), as the thousand and the rest, each read as a count ("1000 250":
    "one thousand two hundred fifty")."""
    if 1000 < number < 3000 and number % 100:
        return f"{number // 1000 * 1000} {number % 1000}"
    return str(number)


def _number_without_commas(match: re.Match) -> str:
    """ "1,250" -> "1000 250" (_count_digits: a number with a thousands comma is a count, not a year); after a
    currency sign just "1250", which the money pass reads as an amount, and in a range too ("1,250-1,300"), which
    the range pass reads."""
    written, before, after = match.group(0), match.string[:match.start()], match.string[match.end():]
    digits = written.replace(",", "")
    if "," not in written or re.search(r"[$\u00a3\u20ac\u00a5] ?$|-$", before) or after.startswith("-"):
        return digits
    return _count_digits(int(digits))


def _amount(count: int, singular: str, plural: str) -> str:
    # Digits stay digits here; the integer pass spells them ("$1500" fifteen hundred dollars, "$1250" _count_digits').
    return f"{_count_digits(count)} {singular if count == 1 else plural}"


def _spell_money(match: re.Match) -> str:
    country, sign, amount, magnitude_word, magnitude_letter = match.groups()
    words = _money_words(sign, amount, magnitude_word or magnitude_letter)  # a letter only close: "$5m", not "$5 m"
    if country:  # "five dollars, fifty cents" -> "five u s dollars, fifty cents"
        words = re.sub(r"\bdollars?\b", lambda unit: f"{_DOLLAR_COUNTRIES[country]} {unit.group(0)}", words,
                       count=1)
    return words


def _spell_currency_sign(match: re.Match) -> str:
    sign, sign_word = match.groups()
    unit, units = ("cent", "cents") if sign == "\u00a2" else _CURRENCIES[sign][:2]
    return f"{unit}{sign_word}" if sign_word else units  # "the pound sign", "in dollars"


def _money_words(sign: str, amount: str, magnitude: str | None = None) -> str:
    unit, units, hundredth, hundredths = _CURRENCIES[sign]
    if magnitude:  # "$2.5 billion", "$5m": "2.5 billion dollars", the decimal pass reads the number
        magnitude = magnitude.lower()
        return f"{amount} {_MAGNITUDE_LETTERS.get(magnitude, magnitude)} {units}"
    whole, _, fraction = amount.partition(".")
    if "." in fraction or len(fraction) > 2 or (fraction and hundredth is None):  # "$1.999", "\u00a51.5": the number
        return f"{amount} {units}"
    count = int(whole or 0)
    hundredth_count = int(fraction.ljust(2, "0")) if fraction else 0  # "$1.5" is fifty cents
    parts = []
    if count or not hundredth_count:
        parts.append(_amount(count, unit, units))
    if hundredth_count:
        parts.append(_amount(hundredth_count, hundredth, hundredths))
    return ", ".join(parts)


def _spell_money_sign_after(match: re.Match) -> str:
    amount, sign = match.groups()
    if sign == "\u00a2":  # "5\u00a2": cents
        return f"{amount} cent" if amount == "1" else f"{amount} cents"
    return _money_words(sign, amount)


def _spell_decimal(match: re.Match) -> str:
    return f"{match.group(1)} point {_digits_one_by_one(match.group(2))}"


def _spell_fraction(match: re.Match) -> str:
    whole, numerator, denominator = match.group(1), int(match.group(2)), int(match.group(3))
    if not 0 < numerator < denominator:  # "3/2", "0/5": not a fraction people write, leave it to the slash
        return match.group(0)
    unit = {2: "half", 4: "quarter"}.get(denominator) or _ordinal_words(denominator)  # "third", "tenth"
    if whole is not None and numerator == 1:
        return f"{whole} and a {unit}"  # the integer pass spells the whole number
    if numerator > 1:
        unit = "halves" if unit == "half" else unit + "s"
    fraction = f"{_words(numerator)} {unit}"
    return f"{whole} and {fraction}" if whole is not None else fraction


def _spoken_date(year: str, month: str, day: str) -> str:
    return f"{_MONTHS[int(month) - 1]} {_ordinal_words(int(day))}, {year}"  # the integer pass spells the year


def _spell_month_day(match: re.Match) -> str:
    month = next(name for name in _MONTHS if name.startswith(match.group(1).lower()))  # "Sept" -> "september"
    return f"{month} {_ordinal_words(int(match.group(2)))}"


def _spell_telephone(match: re.Match) -> str:
    country, area_in_brackets, area, exchange, line = match.groups()
    area = area_in_brackets or area
    groups = [_words(int(country))] if country else []
    if area:
        groups.append(_words(int(area)) if area in _AREA_CODES_SAID_AS_NUMBERS else _digits_one_by_one(area))
    return ", ".join(groups + [_digits_one_by_one(exchange), _digits_one_by_one(line)])


def _spell_regnal(match: re.Match) -> str:
    name, numeral = match.groups()
    value = _roman_value(numeral)
    if numeral == "I" or not 1 <= value <= 40:  # "Henry I am": the pronoun; "George MIX": no king
        return match.group(0)
    return f"{name} the {_ordinal_words(value)}"


def _spell_counted(match: re.Match) -> str:
    word, numeral = match.groups()
    value = _roman_value(numeral)
    return f"{word} {value}" if 1 <= value <= 200 else match.group(0)


def _roman_value(numeral: str) -> int:
    """The value of a numeral _ROMAN matched; 0 for the empty match it may make before a word that is no numeral."""
    values = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}
    total = 0
    for letter, following in zip(numeral, numeral[1:] + " "):
        value = values[letter]
        total += -value if following != " " and values[following] > value else value  # "IV": 5 - 1
    return total


def _spell_long_digit_run(match: re.Match) -> str:
    digits = match.group(0)
    # Ten digits are a telephone number, said three, three and four; longer runs in fours, as cards are printed.
    groups = [digits[:3], digits[3:6], digits[6:]] if len(digits) == 10 else [
        digits[start:start + 4] for start in range(0, len(digits), 4)]
    return ", ".join(_digits_one_by_one(group) for group in groups)


def _spell_unit(match: re.Match) -> str:
    number, unit = match.groups()
    singular, plural = _UNIT_WORDS[unit.lower()]
    return f"{number} {singular if number == '1' else plural}"  # the later passes spell the number


def _fraction_in_digits(match: re.Match) -> str:
    fraction = Fraction(unicodedata.numeric(match.group(0))).limit_denominator(10)
    return f" {fraction.numerator}/{fraction.denominator}"  # "1\u00bd" -> "1 1/2"; the extra space is collapsed later


def _spell_time_of_day(match: re.Match) -> str:
    hours, minutes = int(match.group(1)), int(match.group(2))
    if minutes == 0:
        return f"{_words(hours)} o'clock" if 1 <= hours <= 12 else f"{_words(hours)} hundred"  # "fourteen hundred"
    return f"{_words(hours)} {'oh ' if minutes < 10 else ''}{_words(minutes)}"


def _spell_decade(match: re.Match) -> str:
    number = int(match.group(1))
    if number % 10:  # "1995s", "'85s": not a decade
        return match.group(0)
    words = _spell_integer_value(number)
    return words[:-1] + "ies" if words.endswith("y") else words + "s"  # "ninety" -> "nineties", "hundred" -> "hundreds"


def _spell_integer(match: re.Match) -> str:
    return _spell_integer_value(int(match.group(0)))


def _spell_integer_value(number: int) -> str:
    return _spell_year(number) if 1000 < number < 3000 else _words(number)


def _spell_year(year: int) -> str:
    if 2000 <= year < 2010:  # "two thousand five", not "twenty oh five"
        return _words(year)
    if year % 100 == 0:  # "nineteen hundred"
        return f"{_words(year // 100)} hundred"
    # Read as two pairs of digits: "nineteen ninety-five", "nineteen oh five".
    return _inflect().number_to_words(year, andword="", zero="oh", group=2).replace(", ", " ")


@functools.cache
def _inflect():
    import inflect  # takes about 2 s to import, so only processes that meet a number pay for it

    return inflect.engine()


def _words(number: int) -> str:
    return _inflect().number_to_words(number, andword="")


def _ordinal_words(number: int) -> str:
    return _inflect().ordinal(_words(number))  # "third", "thirty-first"


def _digits_one_by_one(digits: str) -> str:
    return " ".join(_words(int(digit)) for digit in digits)  # "0123" -> "zero one two three"
