"""Corpus preparation: the eSpeak NG synthetic corpus, LJSpeech-1.1 download/extract/filelists, mel precomputation."""
