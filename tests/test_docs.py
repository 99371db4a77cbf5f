"""The documentation a newcomer starts from: README.md stays a front page with the two commands, "Adding a model family"
names every field a family fills in, every relative link in README.md and docs/ leads to a file and heading that
exist, and no file speaks of how the project was made (work sessions, issue numbers)."""
import dataclasses
import re
import subprocess
from pathlib import Path

import pytest

from common.inference_part import InferencePart
from common.recipe import Recipe, StepOutput, TrainerView, WeightsForExport
from common.training_state import ReferenceTrainingState
from common.vocoder import VocoderSpec

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
ADDING_A_FAMILY = ROOT / "docs" / "adding_a_family.md"
# The project's own documents: not those of hidden tool folders (pytest writes .pytest_cache/README.md), whose
# presence would change the number of tests from one run to the next.
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md")),
             *sorted(path for name in ("README.md", "RESULTS.md") for path in ROOT.glob(f"*/{name}")
                     if not path.parent.name.startswith(".")),
             *sorted(ROOT.glob("experiments/*/README.md"))]


def heading_anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-")


def test_readme_is_a_front_page_with_the_two_commands():
    text = README.read_text()
    assert len(text.splitlines()) <= 250, "README.md is the front page; usage goes in <family>/README.md and docs/"
    commands = re.search(r"```bash\n(.*?)```", text, re.S).group(1).splitlines()
    assert [line.split()[:2] for line in commands[:2]] == [["make", "demo"], ["make", "test"]]
    assert "## Adding a model family\n\nAdding a family takes a folder, one registry line and a preset." in text
    assert "(docs/adding_a_family.md)" in text


def table_of(heading: str) -> list[str]:
    """The first column's `names` of the table under the heading of docs/adding_a_family.md that starts with heading."""
    text = ADDING_A_FAMILY.read_text()
    section = text[text.index(heading):]
    section = section[:section.find("\n#", 1)] if "\n#" in section[1:] else section
    return re.findall(r"^\| `([A-Za-z_][A-Za-z0-9_]*)` \|", section, re.M)


@pytest.mark.parametrize("heading, spec", [
    ("## The `Recipe`", Recipe), ("### What `compute_loss` returns", StepOutput),
    ("### What a reference training file gives", ReferenceTrainingState),
    ("### What a family's reader gives an export", WeightsForExport),
    ("## The inference part", InferencePart), ("## The vocoder spec", VocoderSpec),
], ids=lambda value: getattr(value, "__name__", ""))
def test_adding_a_family_lists_exactly_the_fields_of_each_spec_in_their_order(heading, spec):
    assert table_of(heading) == [field.name for field in dataclasses.fields(spec)], (
        f"{ADDING_A_FAMILY.relative_to(ROOT)}: the table under '{heading}' must list {spec.__name__}'s fields")


def test_adding_a_family_lists_every_member_of_the_trainer_view():
    members = [name for name in vars(TrainerView) if not name.startswith("_")] + list(TrainerView.__annotations__)
    assert sorted(table_of("### What a `train_step` may use of the trainer")) == sorted(set(members))


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_relative_links_lead_to_files_and_headings_that_exist(document):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", document.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        linked = (document.parent / path).resolve() if path else document
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md":
            headings = re.findall(r"^#+ (.*)$", linked.read_text(), re.M)
            if anchor not in {heading_anchor(heading) for heading in headings}:
                broken.append(f"{target}: no such heading")
    assert not broken, f"{document.relative_to(ROOT)}: {broken}"


def test_no_file_speaks_of_the_sessions_or_issues_that_made_the_project():
    """Words a user cannot look up: the numbered work sessions and issues the project was built in (git keeps them)."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    found = []
    for name in files.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file() or path.suffix not in {".md", ".py", ".sh", ".txt", ".json", ".yaml", ""}:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if re.search(r"\b(session|issue) #?[0-9]+", line, re.I):
                found.append(f"{name}:{number}: {line.strip()[:80]}")
    assert not found, "\n".join(found)
