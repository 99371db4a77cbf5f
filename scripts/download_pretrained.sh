#!/usr/bin/env bash
# Download NVIDIA's published checkpoints (NGC), resuming partial downloads and checking each file's size and sha256
# against scripts/pretrained_files.tsv:
#   scripts/download_pretrained.sh --list                          # what can be fetched, with sizes and sums
#   scripts/download_pretrained.sh tacotron2-fp32 waveglow-fp32    # by name, or by family (tacotron2, hifigan, ...)
#   scripts/download_pretrained.sh --dest pretrained all           # everything (several GB)
#   scripts/download_pretrained.sh --base-url file:///mirror hifigan-ft   # from a mirror: BASE_URL/<file>
# A file is downloaded to DEST/<file>.part (curl -C - resumes it), checked, and only then renamed to DEST/<file>.
# NVIDIA publishes no sha256 for these files; where the manifest has none the script says so and does not verify.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
MANIFEST="$here/pretrained_files.tsv"
DEST=pretrained
BASE_URL=""
LIST=0
wanted=()

usage() {
    echo "usage: $0 [--list] [--dest DIR] [--base-url URL] [--manifest TSV] NAME|FAMILY|all ..." >&2
}
fail() { echo "error: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --list) LIST=1 ;;
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
        echo "$name: no published sha256; not verified ($(size_of "$path") bytes, sha256 $actual)"
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

# fetch ROW: download (resuming a partial file), check, and only then give the file its name; returns 1 on failure.
fetch() {
    local name family file size sha url source
    IFS=$'\t' read -r name family file size sha url source <<< "$1"
    local target="$DEST/$file" partial="$DEST/$file.part"
    [ -n "$BASE_URL" ] && url="$BASE_URL/$file"
    if [ -f "$target" ]; then
        echo "$name: $target is already there"
        check "$name" "$target" "$size" "$sha"
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
    mv "$partial" "$target"
    case "$file" in *.zip) echo "$name: $target is NGC's zip of the model version; unzip it to get the checkpoint" ;; esac
}

mkdir -p "$DEST"
status=0
for row in "${selected[@]}"; do
    fetch "$row" || status=1
done
exit $status
