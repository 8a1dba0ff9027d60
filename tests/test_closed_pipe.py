"""`codeqa` commands whose reader goes away (`codeqa search ... | head -2`) end as Unix tools do:
no `[Errno 32] Broken pipe`, no traceback, exit status 141 (128 + SIGPIPE, what a shell reports
for `yes | head -1`'s `yes`). Real subprocesses on the sample repo's index; the closed pipe is
made certain by closing its read end before the command starts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.integration


def env_for(settings) -> dict[str, str]:
    return {**os.environ, "CODEQA_DATA_DIR": str(settings.data_dir), "CODEQA_LOCAL_LLM": "0", "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize("args", [
    ["search", "--repo", "sample", "how is the cart total computed?"],
    ["search", "--repo", "sample", "--json", "cart total"],
    ["context", "--repo", "sample", "@definition Cart.add"],
    ["list"],
    ["config"],
    ["--help"],
])
def test_a_command_writing_to_a_closed_pipe_ends_quietly_with_sigpipes_status(indexed_sample, args):
    settings, _ = indexed_sample
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line
    try:
        done = subprocess.run([sys.executable, "-m", "codeqa", *args], stdout=write_end, stderr=subprocess.PIPE,
                              text=True, env=env_for(settings), timeout=300)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")


def test_search_piped_into_head_prints_its_first_lines_and_no_error(indexed_sample):
    settings, _ = indexed_sample
    script = 'set -o pipefail; "$0" -m codeqa search --repo sample "cart total" | head -2'
    done = subprocess.run(["bash", "-c", script, sys.executable], capture_output=True, text=True,
                          env=env_for(settings), timeout=300)
    assert len(done.stdout.splitlines()) == 2 and done.stderr == ""
    assert done.returncode in (0, 141)  # 0 when the output fitted the pipe before head closed it
