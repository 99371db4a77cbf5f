"""scripts/download_pretrained.sh on file:// URLs: a full download is verified, a truncated partial file is resumed and
then verified, a wrong sum is one error line and leaves no file under the final name; the manifest is well formed."""
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "download_pretrained.sh"
MANIFEST = ROOT / "scripts" / "pretrained_files.tsv"
COLUMNS = ("name", "family", "file", "size_bytes", "sha256", "url", "source")

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="the script downloads with curl")


def manifest_rows(path=MANIFEST):
    lines = [line for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return [dict(zip(COLUMNS, line.split("\t"))) for line in lines]


def run(*arguments):
    """The script, loading each file with this Python (PYTHON)."""
    return subprocess.run(["bash", str(SCRIPT), *map(str, arguments)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHON": sys.executable})


@pytest.fixture
def mirror(tmp_path):
    """A folder served as file://, one 'checkpoint' in it, and a manifest naming it with its true size and sum. Its
    bytes are no checkpoint: the tests of the byte checks download it with --no-load."""
    served = tmp_path / "mirror"
    served.mkdir()
    payload = bytes(range(256)) * 400  # 102400 bytes
    (served / "model_a.pt").write_bytes(payload)
    manifest = tmp_path / "manifest.tsv"
    true_sum = hashlib.sha256(payload).hexdigest()
    manifest.write_text("# test manifest\n"
                        f"model-a\tfam\tmodel_a.pt\t{len(payload)}\t{true_sum}\thttps://example.invalid/model_a.pt\tt\n"
                        f"model-b\tfam\tmodel_a.pt\tunknown\tunknown\thttps://example.invalid/model_a.pt\tt\n"
                        f"model-c\tother\tmodel_a.pt\tunknown\t{'0' * 64}\thttps://example.invalid/model_a.pt\tt\n")
    return served, manifest, payload


def test_manifest_rows_are_complete_and_sums_are_hex_or_unknown():
    rows = manifest_rows()
    assert {row["family"] for row in rows} >= {"tacotron2", "waveglow", "hifigan", "wav2vec2"}
    assert len({row["name"] for row in rows}) == len(rows)
    for row in rows:
        assert len(row) == len(COLUMNS) and all(row.values()), row
        assert row["url"].startswith("https://api.ngc.nvidia.com/"), row
        assert row["sha256"] == "unknown" or re.fullmatch(r"[0-9a-f]{64}", row["sha256"]), row
        assert row["size_bytes"] == "unknown" or row["size_bytes"].isdigit(), row
    names = {row["file"] for row in rows}
    assert {"nvidia_tacotron2pyt_fp32_20190427", "nvidia_waveglowpyt_fp16_20190427",
            "hifigan_gen_checkpoint_10000_ft.pt"} <= names


def test_list_shows_every_file_with_its_size_and_sum():
    completed = run("--list")
    assert completed.returncode == 0, completed.stderr
    listed = completed.stdout.splitlines()[1:]
    assert [line.split()[0] for line in listed] == [row["name"] for row in manifest_rows()]
    assert all(line.split()[2:4] == ["unknown", "unknown"] for line in listed)  # nothing published, nothing invented


def test_full_download_is_verified(tmp_path, mirror):
    served, manifest, payload = mirror
    dest = tmp_path / "dest"
    completed = run("--no-load", "--manifest", manifest, "--dest", dest, "--base-url", served.as_uri(), "model-a")
    assert completed.returncode == 0, completed.stderr
    assert "model-a: sha256 verified" in completed.stdout
    assert (dest / "model_a.pt").read_bytes() == payload
    assert not (dest / "model_a.pt.part").exists()
    again = run("--no-load", "--manifest", manifest, "--dest", dest, "--base-url", served.as_uri(), "model-a")
    assert "already there" in again.stdout and "sha256 verified" in again.stdout


def test_truncated_partial_file_resumes_then_verifies(tmp_path, mirror):
    served, manifest, payload = mirror
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "model_a.pt.part").write_bytes(payload[:30000])
    completed = run("--no-load", "--manifest", manifest, "--dest", dest, "--base-url", served.as_uri(), "model-a")
    assert completed.returncode == 0, completed.stderr
    assert "resuming" in completed.stdout and "from byte 30000" in completed.stdout
    assert "model-a: sha256 verified" in completed.stdout
    assert (dest / "model_a.pt").read_bytes() == payload


def test_wrong_sum_is_one_error_line_and_leaves_no_complete_file(tmp_path, mirror):
    served, manifest, _ = mirror
    dest = tmp_path / "dest"
    completed = run("--no-load", "--manifest", manifest, "--dest", dest, "--base-url", served.as_uri(), "model-c")
    assert completed.returncode == 1
    errors = completed.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("error: model-c:") and "sha256" in errors[0], completed.stderr
    assert list(dest.iterdir()) == []  # neither model_a.pt nor a partial file to resume wrong bytes from


def test_file_without_published_sum_says_it_is_not_verified(tmp_path, mirror):
    served, manifest, payload = mirror
    dest = tmp_path / "dest"
    completed = run("--no-load", "--manifest", manifest, "--dest", dest, "--base-url", served.as_uri(),
                    "fam")  # a family
    assert completed.returncode == 0, completed.stderr
    assert "model-b: no published sha256 to check it against" in completed.stdout
    assert (dest / "model_a.pt").read_bytes() == payload
    received = (dest / "model_a.pt").read_bytes()  # model-b is that file without a sum
    assert f"({len(received)} bytes, sha256 {hashlib.sha256(received).hexdigest()})" in completed.stdout


def test_unknown_name_and_option_are_errors(mirror):
    _, manifest, _ = mirror
    unknown = run("--manifest", manifest, "nope")
    assert unknown.returncode == 2 and unknown.stderr.strip().splitlines()[-1].startswith("error: no file or family")
    option = run("--frobnicate")
    assert option.returncode == 2 and "error: unknown option --frobnicate" in option.stderr


def test_a_checkpoint_without_a_published_sum_is_verified_by_loading_it(tmp_path, nvidia_checkpoint):
    """NVIDIA's WaveGlow file (a tiny one in its format) downloads, loads into the model its config describes, and
    its sha256 is printed; the same bytes under a Tacotron 2 row, or cut short, are one error line and leave no
    file."""
    path, state_dict = nvidia_checkpoint
    served = tmp_path / "mirror"
    served.mkdir()
    shutil.copy(path, served / "waveglow.pt")
    (served / "cut.pt").write_bytes(path.read_bytes()[:-1000])
    manifest = tmp_path / "manifest.tsv"
    url = "https://example.invalid/x"
    manifest.write_text(f"waveglow-nv\twaveglow\twaveglow.pt\tunknown\tunknown\t{url}\tt\n"
                        f"mislabelled\ttacotron2\twaveglow.pt\tunknown\tunknown\t{url}\tt\n"
                        f"cut\twaveglow\tcut.pt\tunknown\tunknown\t{url}\tt\n")
    dest = tmp_path / "dest"
    completed = run("--manifest", manifest, "--dest", dest, "--base-url", served.as_uri(), "waveglow-nv")
    assert completed.returncode == 0, completed.stderr
    true_sum = hashlib.sha256(path.read_bytes()).hexdigest()
    assert (f"waveglow-nv: a WaveGlow checkpoint, every one of its model's {len(state_dict)} tensors"
            in completed.stdout), completed.stdout
    assert completed.stdout.count(f"sha256 {true_sum}") == 2  # the bytes received, and the file that loaded
    assert (dest / "waveglow.pt").read_bytes() == path.read_bytes()
    for name in ("mislabelled", "cut"):
        other = tmp_path / name
        failed = run("--manifest", manifest, "--dest", other, "--base-url", served.as_uri(), name)
        errors = failed.stderr.strip().splitlines()
        assert failed.returncode == 1 and len(errors) == 1 and errors[0].startswith(f"error: {name}: "), failed.stderr
        assert errors[0].endswith("removed it, download it again") and list(other.iterdir()) == []
