"""The user documentation stays true: generated reference pages are current, every command and
option is in the reference, every relative link and anchor resolves, and nothing a user reads
names the development machinery (internal tools, issue numbers, development paths, machine load).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragcli.cli.reference import PAGES, anchor, leaf_commands, root_command

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "reference"
REGENERATE = "python -m ragcli.cli.reference docs/reference"


def user_docs() -> list[Path]:
    """Every Markdown page a user reads: the README, the changelog and docs/."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    changelog = ROOT / "CHANGELOG.md"
    return [*pages, changelog] if changelog.exists() else pages


@pytest.mark.parametrize("name", sorted(PAGES))
def test_generated_reference_page_is_current(name):
    committed = (REFERENCE / name).read_text(encoding="utf-8") if (REFERENCE / name).exists() else ""
    assert committed == PAGES[name](), f"docs/reference/{name} is stale: run `{REGENERATE}`"


def test_every_command_and_option_is_in_the_reference():
    from ragcli.config import KEYS

    commands = (REFERENCE / "commands.md").read_text(encoding="utf-8")
    root, ctx = root_command()
    missing = [opt for param in root.get_params(ctx) for opt in param.opts if opt not in commands]
    for path, command, sub_ctx in leaf_commands(root, ctx):
        if f"## {path}\n" not in commands:
            missing.append(path)
        for param in command.get_params(sub_ctx):
            if getattr(param, "hidden", False):
                continue
            names = [*param.opts, *param.secondary_opts] if param.param_type_name == "option" else []
            missing += [f"{path} {name}" for name in names if f"{name}" not in commands]
    settings = (REFERENCE / "settings.md").read_text(encoding="utf-8")
    missing += [key.env for key in KEYS.values() if f"`{key.env}`" not in settings]
    assert not missing, f"not in docs/reference (run `{REGENERATE}`): {missing}"


FENCE = re.compile(r"^```.*?^```", flags=re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", flags=re.MULTILINE)
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def prose(text: str) -> str:
    """Markdown without code blocks and code spans, where links are not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def anchors(page: Path) -> set[str]:
    """The anchors a code host makes for a page's headings (duplicates get -1, -2, ...)."""
    seen: dict[str, int] = {}
    found = set(HTML_ANCHOR.findall(page.read_text(encoding="utf-8")))
    for title in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        slug = anchor(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for target in LINK.findall(prose(page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        path_part, _, fragment = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        where = f"{page.relative_to(root)} -> {target}"
        if not linked.exists():
            broken.append(f"{where} (no such file)")
        elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
            broken.append(f"{where} (no heading with that anchor)")
    return broken


def test_every_relative_link_and_anchor_resolves():
    broken = [line for page in user_docs() for line in broken_links(page)]
    assert not broken, "broken links in the docs:\n  " + "\n  ".join(broken)


def test_the_link_checker_finds_a_broken_file_and_anchor(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other page\n\n## A `code` heading\n")
    page.write_text(
        "# Title\n[ok](other.md#a-code-heading) [self](#title) [web](https://example.com)\n"
        "[gone](missing.md) [bad](other.md#nowhere) `[not a link](x.md)`\n"
    )
    found = [line.split(" -> ")[1] for line in broken_links(page, root=tmp_path)]
    assert found == ["missing.md (no such file)", "other.md#nowhere (no heading with that anchor)"]


# What a user never needs to read: internal tools, issue numbers, development data paths and
# the load of the machine a figure was measured on.
DEVELOPMENT_WORDS = (
    r"farm-bench",
    r"farm-studio",
    r"stand-?in",
    r"\bissues? \d+",
    r"/work/",
    r"\.\./shared",
    r"shared/data",
    r"load average",
    r"under (?:heavy )?load",
    r"heavy load",
    r"\bat load\b",
    r"(?:busy|idle|quiet|loaded) machine",
    r"other (?:agents|helpers|jobs)",
    r"test suites? (?:were|was) running",
    r"pyenv",
)
MACHINERY = re.compile("|".join(DEVELOPMENT_WORDS), flags=re.IGNORECASE)


def machinery_in(name: str, text: str) -> list[str]:
    return [
        f"{name}:{number}: {match.group(0)!r}"
        for number, line in enumerate(text.splitlines(), 1)
        for match in MACHINERY.finditer(line)
    ]


def test_no_development_machinery_in_docs_or_man_page():
    found = [
        hit for page in user_docs() for hit in machinery_in(str(page.relative_to(ROOT)), page.read_text())
    ]
    found += machinery_in("man/rag.1", (ROOT / "man" / "rag.1").read_text().replace("\\-", "-"))
    assert not found, "development machinery in user docs:\n  " + "\n  ".join(found)


def test_no_development_machinery_in_any_help():
    root, ctx = root_command()
    paths = [(), *(tuple(path.split()[1:]) for path, _, _ in leaf_commands(root, ctx))]
    found = []
    for path in paths:
        from ragcli.cli import app

        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        found += machinery_in(" ".join(("rag", *path, "--help")), result.stdout)
    assert not found, "development machinery in help:\n  " + "\n  ".join(found)


def test_the_word_check_catches_each_kind():
    text = "farm-bench -n 5\nsee issue 17\n/work/shared/data/scifact\nat load average 12\nan idle machine"
    assert {hit.split(":")[1] for hit in machinery_in("x", text)} == {"1", "2", "3", "4", "5"}
    assert machinery_in("x", "rag eval retrieval path/to/scifact # on 2 cores") == []


def test_the_readme_set_up_lines_are_what_ci_runs():
    """The README's first block: the quick start (.ci/quickstart runs its first line verbatim)
    and the test command, whose install and pytest invocation .ci/run runs."""
    block = (ROOT / "README.md").read_text(encoding="utf-8").split("```bash\n", 1)[1].split("```", 1)[0]
    install, test = block.splitlines()
    assert install.startswith("pip install -e . && ") and "rag ask" in install
    requirement, command = re.fullmatch(r'pip install -e "(\S+)" && (.+)', test).groups()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f'-e "{requirement}"' in ci and f"\n{command}\n" in ci and "bash .ci/quickstart" in ci


def test_the_python_guides_stage_table_is_the_pipeline():
    """The table listed two stages and a default that no longer exist (`extract`, `choose`,
    `ragcli.answer.extractive`): each row must be a `Pipeline` field with its real default."""
    from dataclasses import fields

    from ragcli.answer.stages import Pipeline, stage_name

    guide = (ROOT / "docs" / "guide" / "python.md").read_text(encoding="utf-8")
    table = guide.split("| stage | signature | default |", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|") for line in table.splitlines()[2:]]
    documented = {cells[1].strip(): cells[-2].split("`")[1] for cells in rows}  # its first `name`
    real = {field.name: stage_name(getattr(Pipeline(), field.name)) for field in fields(Pipeline)}
    assert list(documented) == list(real)
    assert {name: path for name, path in documented.items() if real[name] != path} == {}
