# SPDX-License-Identifier: Apache-2.0
"""make doc-check's three scripts fail on what they are for and pass on the repository: a line
that reads like a diary (scripts/check_worklog.sh), a README.md over 150 lines
(scripts/check_readme.sh), a relative link in a Markdown file that does not resolve, to a file
or to a heading (scripts/check_links.py), a tracked source file without an SPDX line
(scripts/check_spdx.sh, whose --fix adds it after a shebang), a source file over 800 lines
(scripts/check_file_size.sh, make size-check). Each runs on a small git repository made here."""
import os
import subprocess

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PY = "/usr/bin/python3"


def run(args, cwd):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.fixture
def repo(tmp_path):
    run(["git", "init", "-q"], tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# x\n\nSee [the docs](docs/README.md#the-index).\n")
    (tmp_path / "docs" / "README.md").write_text(
        "# The index\n\n[back](../README.md), [a section](#a-b_c), [code](`x`)\n\n"
        "## A `b`_c?\n\n```\n[not a link](nowhere.md)\n```\n")
    return tmp_path


def check(name, repo):
    script = os.path.join(ROOT, "scripts", name)
    return run(([PY] if name.endswith(".py") else ["bash"]) + [script, str(repo)], repo)


@pytest.mark.parametrize("name", ["check_worklog.sh", "check_readme.sh", "check_links.py"])
def test_clean_repo_passes(repo, name):
    p = check(name, repo)
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.parametrize("line", ["The machine le" + "nt to us ran it.",
                                  "Measured this ses" + "sion on the VM.",
                                  "See issue " + "#12.", "Notes in ../" + "shared/DESIGN.md."])
def test_worklog_phrase_fails(repo, line):
    (repo / "docs" / "notes.md").write_text(f"# Notes\n\n{line}\n")
    p = check("check_worklog.sh", repo)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "docs/notes.md:3:" in p.stderr


def test_worklog_ignores_words_that_contain_the_phrase(repo):
    (repo / "docs" / "notes.md").write_text("# Notes\n\nAn excellent, silent, relentless run.\n")
    p = check("check_worklog.sh", repo)
    assert p.returncode == 0, p.stdout + p.stderr


def test_long_readme_fails(repo):
    (repo / "README.md").write_text("line\n" * 151)
    p = check("check_readme.sh", repo)
    assert p.returncode == 1 and "151 lines" in p.stderr, p.stdout + p.stderr
    (repo / "README.md").write_text("line\n" * 150)
    assert check("check_readme.sh", repo).returncode == 0


@pytest.mark.parametrize("link,why", [("docs/missing.md", "no such file"),
                                      ("docs/README.md#no-such-heading", "no heading"),
                                      ("#nowhere", "no heading")])
def test_broken_link_fails(repo, link, why):
    with open(repo / "README.md", "a") as f:
        f.write(f"\nAlso [this]({link}) and [the web](https://example.com/x.md).\n")
    p = check("check_links.py", repo)
    assert p.returncode == 1, p.stdout + p.stderr
    assert f"README.md:5: {link}" in p.stderr and why in p.stderr, p.stderr


@pytest.mark.parametrize("name", ["check_worklog.sh", "check_readme.sh", "check_links.py",
                                  "check_spdx.sh", "check_file_size.sh"])
def test_repository_passes(name):
    p = check(name, ROOT)
    assert p.returncode == 0, p.stdout + p.stderr


def test_source_without_spdx_fails_and_fix_adds_it(repo):
    (repo / "a.c").write_text("/* SPDX-License-Identifier: Apache-2.0 */\nint a;\n")
    (repo / "b.py").write_text("#!/usr/bin/python3\nprint(1)\n")
    run(["git", "add", "a.c", "b.py"], repo)
    p = check("check_spdx.sh", repo)
    assert p.returncode == 1 and "b.py" in p.stderr and "a.c" not in p.stderr, p.stderr
    p = run(["bash", os.path.join(ROOT, "scripts", "check_spdx.sh"), str(repo), "--fix"], repo)
    assert p.returncode == 0, p.stderr
    assert (repo / "b.py").read_text().split("\n")[:2] == [
        "#!/usr/bin/python3", "# SPDX-License-Identifier: Apache-2.0"]
    assert check("check_spdx.sh", repo).returncode == 0


def test_long_source_file_fails(repo):
    """scripts/check_file_size.sh: 801 lines under src/ fail, 800 pass; files outside the
    checked folders and the allowlisted one are not counted."""
    (repo / "src" / "a").mkdir(parents=True)
    (repo / "src" / "server" / "s3ctl").mkdir(parents=True)
    (repo / "docs" / "long.md").write_text("x\n" * 900)
    (repo / "src" / "server" / "s3ctl" / "iam.c").write_text("int x;\n" * 900)
    (repo / "src" / "a" / "b.c").write_text("int x;\n" * 800)
    run(["git", "add", "."], repo)
    p = check("check_file_size.sh", repo)
    assert p.returncode == 0, p.stdout + p.stderr
    (repo / "src" / "a" / "b.c").write_text("int x;\n" * 801)
    (repo / "python" / "wharf").mkdir(parents=True)
    (repo / "python" / "wharf" / "c.py").write_text("x = 1\n" * 900)
    run(["git", "add", "."], repo)
    p = check("check_file_size.sh", repo)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "src/a/b.c: 801 lines" in p.stderr and "python/wharf/c.py: 900 lines" in p.stderr
    assert "iam.c" not in p.stderr and "long.md" not in p.stderr, p.stderr
