"""Rebuild the realistic eval's corpus: every repository of `items.jsonl` at its pinned commits.

    python -m eval.realistic.corpus                      # clone from GitHub into the cache
    python -m eval.realistic.corpus --mirror /work/.mirror   # or read local bare mirrors
    python -m eval.realistic.corpus --repos psf/requests --cache /tmp/evalcache

A mirror directory holds one bare git directory per repository at `<owner>+<name>/repo`.
Without one, each repository is cloned (bare, full history: items pin commits years apart)
into `<cache>/git/<owner>+<name>.git`. Either way a work tree is made per repository under
`<cache>/checkouts/`, sharing the objects (`git clone --shared`), and moved from commit to
commit by the harness. The script checks that every pinned commit is there.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


from eval.realistic.items import load_items

CACHE_ENV = "CODEQA_EVAL_CACHE"
MIRROR_ENV = "CODEQA_EVAL_MIRROR"


class CorpusError(RuntimeError):
    """A repository or commit the eval needs is missing; the message says which."""


def default_cache() -> Path:
    """`$CODEQA_EVAL_CACHE`, else `~/.cache/codeqa-eval`: outside the repository on purpose."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "codeqa-eval").expanduser()


def default_mirror() -> Path | None:
    value = os.environ.get(MIRROR_ENV)
    return Path(value).expanduser() if value else None


def slug(repo: str) -> str:
    """`owner/name` → `owner+name`: one directory name per repository."""
    return repo.replace("/", "+")


def _glob_escape(path: str) -> str:
    """A path as a literal gitignore-style pattern."""
    return "".join("\\" + ch if ch in "*?[]\\!# " else ch for ch in path)


def git(git_dir: Path, *args: str, text: bool = True, check: bool = True) -> str:
    """Run git on a repository (bare or not) and return its stdout."""
    done = subprocess.run(["git", "-C", str(git_dir), *args], capture_output=True, text=text, check=False)
    if check and done.returncode != 0:
        stderr = done.stderr if text else done.stderr.decode("utf-8", "replace")
        raise CorpusError(f"git {' '.join(args[:3])} in {git_dir} failed: {stderr.strip()[:300]}")
    return done.stdout


@dataclass(frozen=True)
class Corpus:
    """Where the eval's repositories live: their git objects and their work trees."""

    cache: Path
    mirror: Path | None = None

    def git_dir(self, repo: str) -> Path:
        if self.mirror is not None:
            return self.mirror / slug(repo) / "repo"
        return self.cache / "git" / f"{slug(repo)}.git"

    def checkout_dir(self, repo: str) -> Path:
        return self.cache / "checkouts" / slug(repo)

    def has_commit(self, repo: str, commit: str) -> bool:
        done = subprocess.run(["git", "-C", str(self.git_dir(repo)), "cat-file", "-e", f"{commit}^{{commit}}"],
                              capture_output=True, check=False)
        return done.returncode == 0

    def fetch(self, repo: str, commits: list[str]) -> None:
        """Make the repository's git objects available, with every pinned commit."""
        source = self.git_dir(repo)
        if not source.exists():
            if self.mirror is not None:
                raise CorpusError(f"{repo}: no mirror at {source}")
            source.parent.mkdir(parents=True, exist_ok=True)
            cloned = subprocess.run(["git", "clone", "--bare", "--quiet", f"https://github.com/{repo}.git",
                                     str(source)], capture_output=True, text=True, check=False)
            if cloned.returncode != 0:
                reason = (cloned.stderr.strip().splitlines() or [f"exit status {cloned.returncode}"])[-1]
                raise CorpusError(f"{repo}: cloning from GitHub failed ({reason}); "
                                  f"point --mirror (or ${MIRROR_ENV}) at local mirrors instead")
        missing = [c for c in commits if not self.has_commit(repo, c)]
        if missing and self.mirror is None:
            for commit in missing:  # not on a branch any more: GitHub still serves reachable ids
                git(source, "fetch", "--quiet", "origin", commit, check=False)
            missing = [c for c in missing if not self.has_commit(repo, c)]
        if missing:
            raise CorpusError(f"{repo}: {len(missing)} pinned commits are missing, e.g. {missing[0]}")

    def checkout(self, repo: str, commit: str) -> Path:
        """Put the repository's work tree at `commit` (untracked and ignored files removed)."""
        work = self.checkout_dir(repo)
        if not (work / ".git").exists():
            if work.exists():
                shutil.rmtree(work)
            work.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", "clone", "--quiet", "--shared", "--no-checkout", str(self.git_dir(repo)),
                            str(work)], check=True)
        self._leave_out_missing_blobs(work, commit)
        git(work, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--force", "--detach", commit)
        git(work, "clean", "-ffdxq")
        return work

    def _leave_out_missing_blobs(self, work: Path, commit: str) -> None:
        """Keep blobs a mirror lacks out of the work tree with a sparse checkout.

        Snapshot mirrors leave out files of 4 MiB and more; CodeQA skips files above 1 MB
        anyway, so leaving them out changes no row. The excluded paths only ever grow, so a
        path left out at an earlier commit never has to be checked out again.
        """
        listing = git(work, "ls-tree", "-r", "-l", "-z", commit)
        missing = [entry.split("\t", 1)[1] for entry in listing.split("\0")
                   if "\t" in entry and entry.split("\t", 1)[0].split()[-1] == "BAD"]
        patterns_file = work / ".git" / "info" / "sparse-checkout"
        known = set(patterns_file.read_text(encoding="utf-8").splitlines()[1:]) if patterns_file.exists() else set()
        wanted = known | {"!/" + _glob_escape(path) for path in missing}
        if wanted == known:
            return
        patterns_file.parent.mkdir(parents=True, exist_ok=True)
        patterns_file.write_text("\n".join(["/*", *sorted(wanted)]) + "\n", encoding="utf-8")
        git(work, "config", "core.sparseCheckout", "true")

    def show(self, repo: str, commit: str, path: str) -> bytes | None:
        """A file's bytes at a commit, None when it does not exist there."""
        done = subprocess.run(["git", "-C", str(self.git_dir(repo)), "show", f"{commit}:{path}"],
                              capture_output=True, check=False)
        return done.stdout if done.returncode == 0 else None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=None, help=f"default: ${CACHE_ENV} or ~/.cache/codeqa-eval")
    parser.add_argument("--mirror", type=Path, default=None,
                        help=f"local bare mirrors at DIR/<owner>+<name>/repo (default: ${MIRROR_ENV})")
    parser.add_argument("--repos", nargs="+", help="only these owner/name repositories")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    corpus = Corpus(args.cache or default_cache(), args.mirror or default_mirror())
    commits: dict[str, list[str]] = {}
    for item in load_items():
        commits.setdefault(item.repo, []).append(item.base_commit)
    try:
        for repo in sorted(commits):
            if args.repos and repo not in args.repos:
                continue
            corpus.fetch(repo, sorted(set(commits[repo])))
            print(f"{repo}: {len(set(commits[repo]))} pinned commits present in {corpus.git_dir(repo)}")
    except (CorpusError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
