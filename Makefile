# make demo  -- builds the synthetic corpus, trains a small Tacotron 2 on CPU, synthesizes phrases/phrase.txt
# make test  -- runs the test suite
.PHONY: setup setup-test demo test

setup:
	bash scripts/setup.sh

setup-test:
	bash scripts/setup.sh --test

demo: setup
	bash scripts/demo.sh

test: setup-test
	.venv/bin/python -m pytest -q tests
