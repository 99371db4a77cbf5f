#!/usr/bin/env bash
# Download NVIDIA's published checkpoints (NGC), resuming partial downloads and checking each file's size and sha256
# against scripts/pretrained_files.tsv:
#   scripts/download_pretrained.sh --list                          # what can be fetched, with sizes and sums
#   scripts/download_pretrained.sh tacotron2-fp32 waveglow-fp32    # by name, or by family (tacotron2, hifigan, ...)
#   scripts/download_pretrained.sh --dest pretrained all           # everything (several GB)
#   scripts/download_pretrained.sh --base-url file:///mirror hifigan-ft   # from a mirror: BASE_URL/<file>
#   scripts/download_pretrained.sh --no-load tacotron2             # without loading each file (no torch needed)
# A file is downloaded to DEST/<file>.part (curl -C - resumes it), checked, and only then renamed to DEST/<file>.
# NVIDIA publishes no sha256 for these files: where the manifest has none, the size and sum are not checked, and the
# file is verified by loading it (python -m scripts.verify_checkpoint: the model its config describes is built and
# takes every weight in its shape); its sha256 is printed. A zip (NGC's whole model version) is checked after unzip.
# The Python that loads is $PYTHON, else the project's .venv, else python3.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
MANIFEST="$here/pretrained_files.tsv"
DEST=pretrained
BASE_URL=""
LIST=0
LOAD=1
wanted=()

usage() {
    echo "usage: $0 [--list] [--no-load] [--dest DIR] [--base-url URL] [--manifest TSV] NAME|FAMILY|all ..." >&2
}
fail() { echo "error: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --list) LIST=1 ;;
        --no-load) LOAD=0 ;;
        --dest) [ $# -ge 2 ] || fail "--dest needs a folder"; DEST=$2; shift ;;
        --base-url) [ $# -ge 2 ] || fail "--base-url needs a URL"; BASE_URL=${2%/}; shift ;;
        --manifest) [ $# -ge 2 ] || fail "--manifest needs a file"; MANIFEST=$2; shift ;;
        -h|--help) usage; exit 0 ;;
        -*) usage; fail "unknown option $1" ;;
        *) wanted+=("$1") ;;
    esac
    shift
done
[ -f "$MANIFEST" ] || fail "manifest not found: $MANIFEST"

# The manifest's rows without comments: name family file size_bytes sha256 url source, tab-separated.
rows() { grep -v '^#' "$MANIFEST" | grep -v '^[[:space:]]*$'; }

if [ "$LIST" = 1 ]; then
    printf '%-26s %-10s %-14s %-64s %s\n' NAME FAMILY SIZE_BYTES SHA256 FILE
    while IFS=$'\t' read -r name family file size sha url source; do
        printf '%-26s %-10s %-14s %-64s %s\n' "$name" "$family" "$size" "$sha" "$file"
    done < <(rows)
    exit 0
fi
if [ ${#wanted[@]} -eq 0 ]; then
    usage; fail "name the files to download (see --list), or 'all'"
fi
command -v curl > /dev/null || fail "curl is not installed (apt-get install curl)"

# Which rows the names ask for; a name that matches nothing is an error before anything is downloaded.
selected=()
for want in "${wanted[@]}"; do
    found=0
    while IFS= read -r row; do
        IFS=$'\t' read -r name family _ <<< "$row"
        if [ "$want" = all ] || [ "$want" = "$name" ] || [ "$want" = "$family" ]; then
            selected+=("$row"); found=1
        fi
    done < <(rows)
    [ "$found" = 1 ] || fail "no file or family called '$want' in $MANIFEST (see --list)"
done

size_of() { stat -c %s "$1"; }

# check NAME PATH SIZE SHA: the size and sha256 the manifest gives (where it gives them); a file that fails is removed
# (resuming wrong bytes cannot mend them), with one error line.
check() {
    local name=$1 path=$2 size=$3 sha=$4 actual
    if [ "$size" != unknown ] && [ "$(size_of "$path")" != "$size" ]; then
        actual=$(size_of "$path"); rm -f "$path"
        echo "error: $name: $path has $actual bytes, the manifest says $size; removed it, download it again" >&2
        return 1
    fi
    if [ "$sha" = unknown ]; then
        # The sum of the bytes received, so that a user can compare it with another download or add it to the manifest.
        actual=$(sha256sum "$path" | cut -d' ' -f1)
        echo "$name: no published sha256 to check it against ($(size_of "$path") bytes, sha256 $actual)"
        return 0
    fi
    actual=$(sha256sum "$path" | cut -d' ' -f1)
    if [ "$actual" != "$sha" ]; then
        rm -f "$path"
        echo "error: $name: $path has sha256 $actual, the manifest says $sha; removed it, download it again" >&2
        return 1
    fi
    echo "$name: sha256 verified"
}

root="$(cd "$here/.." && pwd)"
if [ -n "${PYTHON:-}" ]; then
    python_bin=$PYTHON
elif [ -x "$root/.venv/bin/python" ]; then
    python_bin="$root/.venv/bin/python"
else
    python_bin=python3
fi

# load NAME FAMILY PATH: the file loads into the model its config describes (scripts/verify_checkpoint.py); a file that
# does not is removed (its bytes are wrong, or it is not that model's), with one error line.
load() {
    local name=$1 family=$2 path=$3 said
    [ "$LOAD" = 1 ] || return 0
    if ! "$python_bin" -c "import torch" 2> /dev/null; then
        echo "$name: not verified by loading it: $python_bin has no torch (run scripts/setup.sh, or give --no-load)"
        return 0
    fi
    if said=$(PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" "$python_bin" -m scripts.verify_checkpoint -m "$family" \
                  "$path" 2>&1); then
        echo "$name: ${said#"$path: "}"
        return 0
    fi
    rm -f "$path"
    echo "error: $name: ${said#error: }; removed it, download it again" >&2
    return 1
}

# fetch ROW: download (resuming a partial file), check, and only then give the file its name; returns 1 on failure.
fetch() {
    local name family file size sha url source
    IFS=$'\t' read -r name family file size sha url source <<< "$1"
    local target="$DEST/$file" partial="$DEST/$file.part"
    [ -n "$BASE_URL" ] && url="$BASE_URL/$file"
    if [ -f "$target" ]; then
        echo "$name: $target is already there"
        check "$name" "$target" "$size" "$sha" || return 1
        case "$file" in *.zip) return 0 ;; esac
        load "$name" "$family" "$target"
        return
    fi
    if [ -f "$partial" ]; then
        echo "$name: resuming $partial from byte $(size_of "$partial")"
    else
        echo "$name: downloading $url"
    fi
    # -C -: continue where the partial file ends (a complete one is left as it is).
    if ! curl -fL --retry 3 -sS -C - -o "$partial" "$url"; then
        echo "error: $name: download of $url failed; run again to resume $partial" >&2
        return 1
    fi
    check "$name" "$partial" "$size" "$sha" || return 1
    case "$file" in
        *.zip) echo "$name: $target is NGC's zip of the model version; unzip it, then verify its checkpoint with" \
                    "python -m scripts.verify_checkpoint -m $family FILE" ;;
        *) load "$name" "$family" "$partial" || return 1 ;;
    esac
    mv "$partial" "$target"
}

mkdir -p "$DEST"
status=0
for row in "${selected[@]}"; do
    fetch "$row" || status=1
done
exit $status
