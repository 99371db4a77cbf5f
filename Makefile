# make demo  -- builds the synthetic corpus, trains a small Tacotron 2 on CPU, synthesizes phrases/phrase.txt
# make demo-asr -- builds the eSpeak NG ASR corpus, trains a small wav2vec 2.0 CTC model on CPU, reports CER/WER
# make test  -- runs the test suite
# make test-fast -- runs the tests not marked slow (a couple of minutes)
.PHONY: setup setup-lm setup-test setup-judge demo demo-asr test test-fast

setup:
	bash scripts/setup.sh

# wav2vec 2.0's language-model decoding too (kenlm: a C++ build)
setup-lm:
	bash scripts/setup.sh --lm

setup-test:
	bash scripts/setup.sh --test

# Moonshine base too: the independent judge of the demo's speech
setup-judge:
	bash scripts/setup.sh --judge

demo: setup-judge
	bash scripts/demo.sh

# make demo-de -- the demo in German, read as phonemes (eSpeak NG IPA): scripts/tacotron2/demo_language.sh
.PHONY: demo-de
demo-de: setup
	bash scripts/tacotron2/demo_language.sh

demo-asr: setup-lm
	bash scripts/wav2vec2/demo_asr.sh

# make demo-pretrain -- wav2vec 2.0 pre-trained on the ASR corpus's audio, then fine-tuned on 2 % of its labels
# beside the same fine-tune from a random start: scripts/wav2vec2/demo_pretrain.sh
.PHONY: demo-pretrain
demo-pretrain: setup-lm
	bash scripts/wav2vec2/demo_pretrain.sh

# A pytest process per logical CPU (pytest-xdist), one thread each: most tests are small, or wait on subprocesses
# of their own, and cannot keep two threads busy (docs/testing.md has the times).
test: setup-test
	OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q -n logical tests

test-fast: setup-test
	OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q -n logical -m "not slow" tests
