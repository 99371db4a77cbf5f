"""The eSpeak NG library (shipped by the `espeakng-loader` package), bound through ctypes: loaded and initialised
once per process, with its text-to-phonemes call. Speech synthesis from it lives in scripts/data/espeak.py.

    from common.espeak import text_to_phonemes, version
    text_to_phonemes("Guten Morgen", "de")   # "ɡˈuːtən mˈɔɾɡən"

Translating text to phonemes needs no fork (unlike synthesis, see scripts/data/espeak.py): it is a pure function of
(text, voice) in this library, in any order, interleaved with other voices, and in any process
(tests/common/test_phonemes.py checks it). The library is not thread-safe, so every call holds a lock.
"""
from __future__ import annotations

import ctypes
import threading
from pathlib import Path

SAMPLING_RATE = 22050  # what eSpeak NG's voices are recorded at; checked when the library starts

# From eSpeak NG's speak_lib.h.
_AUDIO_OUTPUT_SYNCHRONOUS = 2  # espeak_Synth returns once the whole text has gone through the callback
_INITIALIZE_DONT_EXIT = 0x8000  # report a missing data directory as an error instead of calling exit()
CHARS_UTF8 = 1
_PHONEMES_IPA = 0x02  # espeak_TextToPhonemes's phoneme mode: IPA as UTF-8, no separator between phonemes
_PHONEMES_MNEMONICS = 0x00  # its mode for eSpeak's own ASCII names, which synthesis reads back inside [[ ]]
EE_OK = 0

_library = None
_data_path: str | None = None
_lock = threading.Lock()


class UnknownVoiceError(ValueError):
    """eSpeak NG has no voice or language of that name."""


def load_library():
    """The eSpeak NG library, loaded and initialised once per process."""
    global _library, _data_path
    if _library is not None:
        return _library
    try:
        import espeakng_loader
    except ImportError as error:
        raise RuntimeError("eSpeak NG needs the 'espeakng-loader' package (pip install espeakng-loader)") from error
    library_path = espeakng_loader.get_library_path()
    data_path = espeakng_loader.get_data_path()
    try:
        library = ctypes.CDLL(library_path)
    except OSError as error:
        raise RuntimeError(f"cannot load the eSpeak NG library {library_path}: {error}") from error

    library.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    library.espeak_Initialize.restype = ctypes.c_int
    library.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    library.espeak_SetVoiceByName.restype = ctypes.c_int
    library.espeak_Info.argtypes = [ctypes.c_void_p]
    library.espeak_Info.restype = ctypes.c_char_p
    # const char *espeak_TextToPhonemes(const void **textptr, int textmode, int phonememode)
    library.espeak_TextToPhonemes.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int]
    library.espeak_TextToPhonemes.restype = ctypes.c_char_p

    sampling_rate = library.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, data_path.encode(), _INITIALIZE_DONT_EXIT)
    if sampling_rate != SAMPLING_RATE:
        raise RuntimeError(
            f"eSpeak NG ({library_path}, data {data_path}) reports a sampling rate of {sampling_rate} Hz "
            f"(-1 means it failed to start); expected {SAMPLING_RATE} Hz"
        )
    _library, _data_path = library, data_path
    return library


def version() -> str:
    """The library's version, e.g. "1.52.0" (its phonemes may change from one version to the next)."""
    return load_library().espeak_Info(None).decode()


def set_voice(library, voice: str) -> None:
    """Select a voice (or a language: "de", "en-us") for what follows; UnknownVoiceError if eSpeak has none."""
    if library.espeak_SetVoiceByName(voice.encode()) != EE_OK:
        raise UnknownVoiceError(f"eSpeak NG has no voice named {voice!r} (a voice or language code: en-us, en-gb, de, "
                                f"es, fr, ...; the files under {Path(_data_path or '') / 'lang'} list them)")


def check_voice(voice: str) -> None:
    """UnknownVoiceError unless eSpeak NG has this voice (or language)."""
    library = load_library()
    with _lock:
        set_voice(library, voice)


def text_to_phonemes(text: str, voice: str) -> str:
    """IPA of `text` as eSpeak NG's `voice` reads it, with its stress marks: its clauses (phoneme_clauses) joined by a
    space."""
    return " ".join(phoneme_clauses(text, voice))


def phoneme_clauses(text: str, voice: str, mnemonics: bool = False) -> list[str]:
    """`text` as eSpeak NG's `voice` reads it, a clause at a time (eSpeak translates one clause per call and drops the
    punctuation that ends it): IPA with stress marks, or with `mnemonics` eSpeak's ASCII phoneme names ("D@ r'Iv3"),
    which its synthesis reads back inside [[ ]]."""
    library = load_library()
    encoded = ctypes.create_string_buffer(text.encode("utf-8"))
    clauses = []
    with _lock:
        set_voice(library, voice)
        position = ctypes.c_void_p(ctypes.addressof(encoded))
        while position.value:  # the library advances it past each clause, and sets it to NULL at the end
            phonemes = library.espeak_TextToPhonemes(ctypes.byref(position), CHARS_UTF8,
                                                     _PHONEMES_MNEMONICS if mnemonics else _PHONEMES_IPA)
            if phonemes and phonemes.decode("utf-8").strip():
                clauses.append(phonemes.decode("utf-8").strip())
    return clauses
