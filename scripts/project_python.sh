# Sourced by the shell scripts once they are in the project root: PYTHON is the interpreter they run, unless the caller
# set it: the project's virtual environment (.venv, which scripts/setup.sh makes) if there is one, else python3.
if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
