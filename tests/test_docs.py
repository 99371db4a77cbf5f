"""The documentation a newcomer starts from: README.md stays a front page with the two commands, "Adding a model family"
names every field a family fills in, and every relative link in README.md and docs/ leads to a file and heading that
exist."""
import dataclasses
import importlib
import re
import warnings
from pathlib import Path

import pytest

from common.recipe import Recipe

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
ADDING_A_FAMILY = ROOT / "docs" / "adding_a_family.md"
# The specs a family fills in besides its Recipe, as (module, class); a spec whose module is not there yet is reported.
OTHER_SPECS = [("common.inference_part", "InferencePart"), ("common.vocoder", "VocoderSpec")]
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("*/README.md")),
             *sorted(ROOT.glob("*/RESULTS.md"))]


def importable_spec(module_name: str, class_name: str):
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError):
        return None


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


def test_adding_a_family_names_every_field_of_the_recipe_and_the_specs():
    named = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", ADDING_A_FAMILY.read_text()))
    specs = {"Recipe": Recipe}
    absent = []
    for module_name, class_name in OTHER_SPECS:
        spec = importable_spec(module_name, class_name)
        if spec is None:
            absent.append(f"{class_name} ({module_name})")
        else:
            specs[class_name] = spec
    if absent:
        warnings.warn(f"not checked, not importable yet: {', '.join(absent)}")
    missing = {name: [f.name for f in dataclasses.fields(spec) if f.name not in named] for name, spec in specs.items()}
    assert not any(missing.values()), (
        f"{ADDING_A_FAMILY.relative_to(ROOT)} does not name these fields: {missing} "
        f"(checked: {', '.join(specs)}; absent, so not checked: {', '.join(absent) or 'none'})")


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
