"""Text to 22050 Hz speech with the eSpeak NG library that the `espeakng-loader` package ships.

    from scripts.data.espeak import synthesize
    audio, sampling_rate = synthesize("Hello there.", voice="en-us", words_per_minute=175)

eSpeak NG is a formant synthesiser: robotic, but clear, fast (~100x real time on one CPU core), needs no model
download, and gives a single consistent speaker, which is what a test corpus for Tacotron 2 needs.

Why every utterance is spoken in a forked child process: the library keeps hidden state from one utterance to the
next (the phase of its pitch "flutter", its automatic gain control, a voicing cycle counter, the C library's rand()
used for breath noise), and no API call resets it, not even terminating and re-initialising the library. So the
same text spoken twice in one process gives different samples. The library is initialised once in this process and
never speaks here; each utterance is synthesised in a fork() of it, which starts from that same pristine state and
is thrown away afterwards. That makes the output a pure function of (text, voice, rate), in any order and in any
process, for ~5 ms per utterance. fork() limits this module to Linux and macOS.
"""
from __future__ import annotations

import ctypes
import os

import numpy as np

from common import espeak
from common.espeak import SAMPLING_RATE

# From eSpeak NG's speak_lib.h (the library itself is loaded by common/espeak.py).
_POS_CHARACTER = 1
_PARAMETER_RATE = 1
_PARAMETER_PITCH = 3
_RATE_MINIMUM, _RATE_MAXIMUM = 80, 450  # words per minute
_PITCH_MINIMUM, _PITCH_MAXIMUM = 0, 100  # the voice's base pitch, 50 by default
_PHONEME_INPUT = 0x100  # espeakPHONEMES: text inside [[ ]] is read as eSpeak's phoneme mnemonics

# int callback(short *wav, int numsamples, espeak_EVENT *events); returning 0 means "carry on".
_SynthCallback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)

_library = None
_callback = None  # kept referenced: the library calls it for as long as the process lives
_chunks: list[np.ndarray] = []  # int16 pieces of the utterance being synthesised (only ever used in a child)


def _collect_samples(samples, count, events) -> int:
    if count > 0:
        _chunks.append(np.ctypeslib.as_array(samples, shape=(count,)).copy())
    return 0


def _load_library():
    """eSpeak NG (common/espeak.py), with this module's synthesis callback, once per process."""
    global _library, _callback
    if _library is not None:
        return _library
    if not hasattr(os, "fork"):
        raise RuntimeError("scripts.data.espeak needs os.fork() (Linux or macOS) to make eSpeak NG deterministic")
    library = espeak.load_library()
    library.espeak_SetSynthCallback.argtypes = [_SynthCallback]
    library.espeak_SetSynthCallback.restype = None
    library.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    library.espeak_SetParameter.restype = ctypes.c_int
    library.espeak_Synth.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_uint,
                                     ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
    library.espeak_Synth.restype = ctypes.c_int
    _callback = _SynthCallback(_collect_samples)
    library.espeak_SetSynthCallback(_callback)
    _library = library
    return library


def _synthesize_here(library, text: bytes, voice: str, words_per_minute: int, pitch: int | None,
                     flags: int) -> np.ndarray:
    """Speak `text` in this process (a fresh fork) and return its int16 samples."""
    espeak.set_voice(library, voice)  # an unknown voice: UnknownVoiceError, a ValueError
    library.espeak_SetParameter(_PARAMETER_RATE, words_per_minute, 0)
    if pitch is not None:
        library.espeak_SetParameter(_PARAMETER_PITCH, pitch, 0)
    # Fix every random number generator eSpeak may draw from, so voices with breath noise are deterministic too.
    if hasattr(library, "espeak_ng_SetRandSeed"):
        library.espeak_ng_SetRandSeed(0)
    ctypes.CDLL(None).srand(0)
    _chunks.clear()
    status = library.espeak_Synth(text, len(text) + 1, 0, _POS_CHARACTER, 0, flags, None, None)
    if status != espeak.EE_OK:
        raise RuntimeError(f"espeak_Synth failed with status {status}")
    if not _chunks:
        return np.zeros(0, dtype=np.int16)
    return np.concatenate(_chunks)


def synthesize(text: str, voice: str = "en-us", words_per_minute: int = 175,
               pitch: int | None = None, phoneme_input: bool = False) -> tuple[np.ndarray, int]:
    """Speak `text`; returns (float32 samples in [-1, 1], sampling rate). The same arguments give the same samples.
    `pitch` (0-100) moves the voice's base pitch; None keeps the voice's own (50). With `phoneme_input`, what is
    inside [[ ]] is read as eSpeak's phoneme mnemonics (common.espeak.phoneme_clauses(..., mnemonics=True))."""
    if not text.strip():
        raise ValueError("cannot synthesise empty text")
    if not _RATE_MINIMUM <= words_per_minute <= _RATE_MAXIMUM:
        raise ValueError(f"words_per_minute is {words_per_minute}; "
                         f"eSpeak NG accepts {_RATE_MINIMUM} to {_RATE_MAXIMUM}")
    if pitch is not None and not _PITCH_MINIMUM <= pitch <= _PITCH_MAXIMUM:
        raise ValueError(f"pitch is {pitch}; eSpeak NG accepts {_PITCH_MINIMUM} to {_PITCH_MAXIMUM}")
    library = _load_library()
    encoded = text.encode("utf-8")
    flags = espeak.CHARS_UTF8 | (_PHONEME_INPUT if phoneme_input else 0)

    # The child answers with one status byte, then int16 samples (status 0) or a UTF-8 error message (status 1 for a
    # bad argument, raised here as ValueError; status 2 for anything else).
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # the child: never returns into the caller's code
        exit_code = 1
        try:
            os.close(read_end)
            try:
                reply = b"\x00" + _synthesize_here(library, encoded, voice, words_per_minute, pitch, flags).tobytes()
            except ValueError as error:  # handed to the parent, which raises it
                reply = b"\x01" + str(error).encode()
            except Exception as error:
                reply = b"\x02" + f"{type(error).__name__}: {error}".encode()
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(reply)
            exit_code = 0
        finally:
            os._exit(exit_code)

    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        reply = pipe.read()
    _, wait_status = os.waitpid(child, 0)
    if os.waitstatus_to_exitcode(wait_status) != 0 or not reply:
        raise RuntimeError(f"the eSpeak NG child process died (wait status {wait_status}) while speaking {text!r}")
    if reply[:1] == b"\x01":
        raise ValueError(reply[1:].decode())
    if reply[:1] == b"\x02":
        raise RuntimeError(f"eSpeak NG failed on {text!r}: {reply[1:].decode()}")
    samples = np.frombuffer(reply, dtype=np.int16, offset=1)
    return samples.astype(np.float32) / 32768.0, SAMPLING_RATE
