"""repo_files: what a walk indexes and why it skips the rest, on real trees in tmp_path."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from codeqa.parsing.repo_files import RepoPathError, hash_bytes, walk_repo

pytestmark = pytest.mark.unit


def _write(root: Path, rel: str, content: str | bytes = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _paths(root: Path) -> list[str]:
    return [source.path for source in walk_repo(root).files]


def test_indexes_code_and_docs_with_relative_posix_paths(tmp_path: Path) -> None:
    _write(tmp_path, "src/pkg/mod.py", "def f():\n    return 1\n")
    _write(tmp_path, "README.md", "# Hi\n")
    _write(tmp_path, "docs/guide.rst", "Guide\n=====\n")
    _write(tmp_path, "CHANGES", "1.0: first\n")
    _write(tmp_path, "notes.unknownext", "???")
    report = walk_repo(tmp_path)
    assert [s.path for s in report.files] == ["CHANGES", "README.md", "docs/guide.rst", "notes.unknownext",
                                              "src/pkg/mod.py"]
    by_path = {s.path: s for s in report.read_all()}
    assert by_path["notes.unknownext"].language == "other"  # no language, still text: indexed as text
    assert by_path["README.md"].language == "markdown"
    assert by_path["docs/guide.rst"].language == "rst"
    assert by_path["CHANGES"].language == "text"
    assert by_path["src/pkg/mod.py"].language == "python"
    module = by_path["src/pkg/mod.py"]
    raw = (tmp_path / "src/pkg/mod.py").read_bytes()
    assert module.abs_path == str((tmp_path / "src/pkg/mod.py").resolve())
    assert module.sha256 == hashlib.sha256(raw).hexdigest() == hash_bytes(raw)
    assert module.size == len(raw)
    assert module.mtime_ns == (tmp_path / "src/pkg/mod.py").stat().st_mtime_ns
    assert module.text == raw.decode()
    assert not module.decoded_with_replacement
    assert not report.skipped


def test_gitignore_that_ignores_everything_then_unignores_directories_and_extensions(tmp_path: Path) -> None:
    # zeromicro/go-zero's .gitignore: ignore all, then re-include names with an extension and
    # every directory (git check-ignore agrees: core/ and core/logx/logs.go are not ignored).
    _write(tmp_path, ".gitignore", "# Ignore all\n*\n!*.*\n!*/\n**/logs\n")
    _write(tmp_path, "core/logx/logs.go", "package logx\n")
    _write(tmp_path, "core/logs/out.go", "package logs\n")
    _write(tmp_path, "LICENSE", "MIT")
    report = walk_repo(tmp_path)
    assert [s.path for s in report.files] == ["core/logx/logs.go"]
    assert {"LICENSE", "core/logs/"} <= set(report.skipped_examples["ignored"])


def test_gitignore_line_git_cannot_read_is_skipped_and_the_rest_applied(tmp_path: Path) -> None:
    # psf/black's .gitignore had a lone "!": git skips that line (git status agrees), the walk raised.
    _write(tmp_path, ".gitignore", "*.log\n!\n/generated/\n")
    _write(tmp_path, "app.log", "x")
    _write(tmp_path, "generated/out.py")
    _write(tmp_path, "src/main.py")
    report = walk_repo(tmp_path)
    assert [s.path for s in report.files] == ["src/main.py"]
    assert {"app.log", "generated/"} <= set(report.skipped_examples["ignored"])


def test_nested_gitignore_negation_and_info_exclude(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "*.log\n!keep.log\n/generated/\n")
    _write(tmp_path, "app.log", "x")
    _write(tmp_path, "keep.log", "x")
    _write(tmp_path, "generated/out.py")
    _write(tmp_path, "lib/generated/real.py")
    _write(tmp_path, "lib/.gitignore", "secret.py\n*.txt\n!notes.txt\n")
    _write(tmp_path, "lib/secret.py")
    _write(tmp_path, "lib/a.txt", "a")
    _write(tmp_path, "lib/notes.txt", "n")
    _write(tmp_path, "secret.py")
    _write(tmp_path, ".git/info/exclude", "local_only.py\n")
    _write(tmp_path, "local_only.py")
    report = walk_repo(tmp_path)
    assert [s.path for s in report.files] == ["keep.log", "lib/generated/real.py", "lib/notes.txt", "secret.py"]
    assert report.skipped["ignored"] == 5  # app.log, generated/, lib/secret.py, lib/a.txt, local_only.py
    assert "generated/" in report.skipped_examples["ignored"]
    assert "keep.log" not in report.skipped_examples["ignored"]  # re-included by the negation


def test_vendored_dirs_are_pruned(tmp_path: Path) -> None:
    for vendored in ["node_modules/lib/index.js", ".venv/lib/x.py", "target/debug/build.rs",
                     "sub/node_modules/a.js", "myenv/lib/site.py", ".git/hooks/pre.py"]:
        _write(tmp_path, vendored)
    _write(tmp_path, "myenv/pyvenv.cfg", "home = /usr\n")
    _write(tmp_path, "main.rs", "fn main() {}\n")
    report = walk_repo(tmp_path)
    assert _paths(tmp_path) == ["main.rs"]
    assert report.skipped["vendored"] == 6
    assert set(report.skipped_examples["vendored"]) <= {
        "node_modules/", ".venv/", "target/", "sub/node_modules/", "myenv/", ".git/"}


def test_binary_large_and_minified_files(tmp_path: Path) -> None:
    _write(tmp_path, "blob.py", b"abc\x00def\n")
    _write(tmp_path, "logo.png", b"\x89PNG\r\n")
    _write(tmp_path, "huge.py", "x = 1\n" * (5_000_000 // 6))
    _write(tmp_path, "app.min.js", "var a=1;\n")
    _write(tmp_path, "bundle.js", "var a=1;" * 2000 + "\n")
    _write(tmp_path, "ok.js", "function f() {\n  return 1;\n}\n" * 300)
    _write(tmp_path, "table.py", "T = '" + "ab" * 3000 + "'\n" + "def f():\n    return 1\n" * 400)
    _write(tmp_path, "long_prose.md", ("word " * 200 + "\n\n") * 10)
    report = walk_repo(tmp_path)
    assert report.skipped["binary"] == 1  # logo.png, by name: no content is read during the walk
    assert [s.path for s in report.read_all()] == ["long_prose.md", "ok.js", "table.py"]
    assert report.skipped["binary"] == 2
    assert report.skipped["too_large"] == 1
    assert report.skipped_examples["minified"] == ["app.min.js", "bundle.js"]


def test_max_file_bytes_is_configurable(tmp_path: Path) -> None:
    _write(tmp_path, "a.py", "x = 1\n" * 100)
    assert walk_repo(tmp_path, max_file_bytes=100).skipped["too_large"] == 1
    assert len(walk_repo(tmp_path, max_file_bytes=600).files) == 1


def test_latin1_is_indexed_with_replacement_and_bom_is_stripped(tmp_path: Path) -> None:
    _write(tmp_path, "latin.py", "# caf\u00e9\nx = 1\n".encode("latin-1"))
    _write(tmp_path, "bom.py", b"\xef\xbb\xbfy = 2\n")
    report = walk_repo(tmp_path)
    by_path = {s.path: s for s in report.read_all()}
    assert by_path["latin.py"].text == "# caf\ufffd\nx = 1\n"
    assert by_path["latin.py"].decoded_with_replacement
    assert by_path["bom.py"].text == "y = 2\n"
    assert not by_path["bom.py"].decoded_with_replacement
    assert by_path["bom.py"].size == 9
    assert report.non_utf8 == 1


def test_symlinks_are_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _write(outside, "secret.py")
    repo = tmp_path / "repo"
    _write(repo, "src/real.py")
    (repo / "src" / "loop").symlink_to(repo / "src", target_is_directory=True)
    (repo / "up").symlink_to("..", target_is_directory=True)
    (repo / "escape").symlink_to(outside, target_is_directory=True)
    (repo / "escape.py").symlink_to(outside / "secret.py")
    (repo / "alias.py").symlink_to(repo / "src" / "real.py")
    (repo / "dangling.py").symlink_to(repo / "missing.py")
    report = walk_repo(repo)
    assert [s.path for s in report.files] == ["src/real.py"]
    assert report.skipped["symlink_loop"] == 1
    assert report.skipped_examples["symlink_loop"] == ["src/loop"]
    assert sorted(report.skipped_examples["symlink_outside"]) == ["escape", "escape.py", "up"]
    assert report.skipped_examples["symlink_duplicate"] == ["alias.py"]
    assert report.skipped_examples["unreadable"] == ["dangling.py"]


def test_fifo_is_unreadable_and_does_not_block(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    _write(tmp_path, "a.py")
    report = walk_repo(tmp_path)
    assert [s.path for s in report.files] == ["a.py"]
    assert report.skipped_examples["unreadable"] == ["pipe.py"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_denied_is_unreadable(tmp_path: Path) -> None:
    locked = _write(tmp_path, "locked.py")
    locked.chmod(0)
    try:
        report = walk_repo(tmp_path)
        sources = report.read_all()
    finally:
        locked.chmod(0o644)
    assert sources == []
    assert report.skipped_examples["unreadable"] == ["locked.py"]


def test_empty_repo_and_only_ignored_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    report = walk_repo(empty)
    assert report.files == [] and sum(report.skipped.values()) == 0 and report.non_utf8 == 0
    ignored = tmp_path / "ignored"
    _write(ignored, ".gitignore", "*\n")
    _write(ignored, "a.py")
    _write(ignored, "b/c.py")
    report = walk_repo(ignored)
    assert report.files == []
    assert report.skipped["ignored"] == 3  # .gitignore itself, a.py, b/


def test_bad_roots_raise_repo_path_error(tmp_path: Path) -> None:
    with pytest.raises(RepoPathError, match="does not exist"):
        walk_repo(tmp_path / "nope")
    file_root = _write(tmp_path, "file.py")
    with pytest.raises(RepoPathError, match="not a directory"):
        walk_repo(file_root)
    assert issubclass(RepoPathError, ValueError)


def _languages(root: Path) -> dict[str, str]:
    return {found.path: found.language for found in walk_repo(root).files}


def test_every_text_file_is_found_in_its_format(tmp_path: Path) -> None:
    for rel in ["Dockerfile", "docker/Dockerfile.prod", "Makefile", "lib/rules.mk", "k8s/app.yaml", "pyproject.toml",
                "package.json", "db/schema.sql", "infra/main.tf", "api.proto", "schema.graphql",
                "site/index.html", "site/app.css", "setup.cfg", ".env.example", "CMakeLists.txt", "Gemfile",
                "src/lexer.nim", "data/rates.csv"]:
        _write(tmp_path, rel, "text\n")
    assert _languages(tmp_path) == {
        "Dockerfile": "dockerfile", "docker/Dockerfile.prod": "dockerfile", "Makefile": "makefile",
        "lib/rules.mk": "makefile", "k8s/app.yaml": "yaml", "pyproject.toml": "toml", "package.json": "json",
        "db/schema.sql": "sql", "infra/main.tf": "hcl", "api.proto": "protobuf", "schema.graphql": "graphql",
        "site/index.html": "html", "site/app.css": "css", "setup.cfg": "ini", ".env.example": "ini",
        "CMakeLists.txt": "cmake", "Gemfile": "ruby", "src/lexer.nim": "other", "data/rates.csv": "other"}


def test_secrets_and_version_control_files_are_never_indexed(tmp_path: Path) -> None:
    for rel in [".env", "config/.env.production", "certs/server.pem", "deploy/id_rsa", ".npmrc", ".gitignore",
                ".gitattributes", "config/.env.example", "app.py"]:
        _write(tmp_path, rel, "SECRET=1\n")
    report = walk_repo(tmp_path)
    assert [found.path for found in report.files] == ["app.py", "config/.env.example"]
    assert report.skipped["secret"] == 5 and report.skipped["vcs"] == 2


def test_extensionless_scripts_by_their_shebang(tmp_path: Path) -> None:
    _write(tmp_path, "bin/deploy", "#!/usr/bin/env bash\nset -e\n")
    _write(tmp_path, "bin/migrate", "#!/usr/bin/python3 -u\nimport sys\n")
    _write(tmp_path, "bin/serve", "#!/usr/bin/env -S node --no-warnings\nconsole.log(1)\n")
    _write(tmp_path, "bin/notes", "just some words\n")
    _write(tmp_path, "bin/tool", b"\x7fELF\x02\x01\x01\x00\x00\x00")
    report = walk_repo(tmp_path)
    assert {found.path: found.language for found in report.files} == {
        "bin/deploy": "bash", "bin/migrate": "python", "bin/serve": "javascript", "bin/notes": "other"}
    assert report.skipped_examples["binary"] == ["bin/tool"]


def test_headers_are_cpp_by_their_constructs_or_their_neighbours(tmp_path: Path) -> None:
    _write(tmp_path, "fmt/format.h", "// Formatting library\n#pragma once\nnamespace fmt {\nint f();\n}\n")
    _write(tmp_path, "fmt/args.h", "#include <string>\nint g(std::string s);\n")
    _write(tmp_path, "c/list.h", "/* see std::list for the C++ one */\nstruct list { int n; };\n")
    _write(tmp_path, "c/list.c", "int n;\n")
    _write(tmp_path, "mixed/util.h", "int util(void);\n")
    _write(tmp_path, "mixed/util.cpp", "int util() { return 0; }\n")
    _write(tmp_path, "plain/api.h", "int api(void);\n")
    assert _languages(tmp_path) == {
        "fmt/format.h": "cpp", "fmt/args.h": "cpp",  # namespace, std:: (outside comments)
        "c/list.h": "c", "c/list.c": "c",
        "mixed/util.h": "cpp", "mixed/util.cpp": "cpp",  # no construct, but its directory is C++
        "plain/api.h": "c"}
