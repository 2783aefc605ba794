"""Suite `git` (issue 27): what a developer's filesystem does for git: clone a local repository,
check out an old and a new revision, `git status` cold and warm, `git gc`.

The repository: a history made by the guest program `fslab-gitrepo` (harness/guest/fslab_gitrepo.py)
from Debian's linux-source-6.1 tree in the image (/usr/src/fslab/linux): the profile's directories
split into COMMITS commits, each adding files and editing earlier ones, with fixed authors and
dates, so every filesystem and repetition clones the same commits. It is not the kernel's own
history (the image holds no git history; fetching one would need the network at build time).

One case, `clone-checkout-status-gc`, steps:
1. `make-repo` (untimed, once per mkfs: a step's `once`): the bare repository {mnt}/git/src.git,
   packed, on the filesystem under test.
2. `clean` (untimed): removes the previous repetition's clone, if any.
3. a cold start (remount, drop caches), then `clone` (timed): `git clone --no-hardlinks` of the
   bare repository (objects copied, the newest revision checked out).
4. `checkout-old`, `checkout-new` (timed): tag `old` (the first commit: most files removed),
   then tag `new` again (every file back, the edited ones rewritten).
5. a cold start, then `status-cold` (timed) and `status-warm` (timed): `git status --porcelain`.
6. `gc` (timed): `git gc` of the clone.
Metrics: each step's real_s (the headline, lower is better) and cpu_s. Git runs with no system or
global configuration (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null).

Set-up once per mkfs, and what that means here: the harness makes every filesystem again before
each round (issue 30), so `make-repo` runs in every repetition (each record's `setup_from_rep` is
its own rep); with one mkfs for the boot only the first repetition would make it.

Claims: none, because no published comparison of filesystems for these git operations could be
read. The Phoronix Test Suite has a `git` test (a scripted series of git commands on the GTK
repository), but no page whose words state a finding between filesystems for it was found; a
search of stored public pages (2026-11-27: Phoronix, openbenchmarking.org, blogs on git status
and checkout speed) found git benchmarks of one filesystem, of operating systems, of parallel
checkout or of network filesystems, and one forum post timing `tree .git` of a git-annex on an
ext4 disk against a btrfs one on another drive (not these operations, not the same disk); none
compares ext4, xfs and btrfs at git's work. A claim needs a page's own words
(harness/suites/web_sources.py), so none is declared.
"""

from __future__ import annotations

from typing import Any

from harness.suites.suite import Case, Suite
from harness.suites.suite import steps as as_steps

PROGRAM = "/usr/local/bin/fslab-gitrepo"
SOURCE = "/usr/src/fslab/linux"  # images/debian-12/bootstrap.sh unpacks linux-source-6.1 there
REPO = "{mnt}/git/src.git"
WORK = "{mnt}/git/work"
ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "LC_ALL": "C"}

_PROFILES = {
    # profile: (directories of the kernel tree, commits, case timeout s)
    "paper": (".", 16, 7200),
    "quick": ("kernel,lib,mm,fs,net/ipv4", 8, 3600),
    "smoke": ("lib", 4, 900),
}


def _case(profile: str) -> Case:
    paths, commits, timeout = _PROFILES[profile]

    def git(name: str, *args: str) -> dict[str, Any]:
        return {"name": name, "env": ENV, "argv": ["git", "-C", WORK, *args]}

    steps: list[dict[str, Any]] = [
        {"name": "make-repo", "timed": False, "once": True, "env": ENV,
         "argv": [PROGRAM, "--src", SOURCE, "--paths", paths, "--commits", str(commits), "--out", REPO]},
        {"name": "clean", "timed": False, "argv": ["rm", "-rf", WORK]},
        {"name": "cold-clone", "builtin": "cold-start", "timed": False},
        {"name": "clone", "env": ENV, "argv": ["git", "clone", "-q", "--no-hardlinks", REPO, WORK]},
        git("checkout-old", "checkout", "-q", "old"),
        git("checkout-new", "checkout", "-q", "new"),
        {"name": "cold-status", "builtin": "cold-start", "timed": False},
        git("status-cold", "status", "--porcelain"),
        git("status-warm", "status", "--porcelain"),
        git("gc", "gc", "-q"),
    ]
    params = {"source": SOURCE, "paths": paths, "commits": commits}
    return Case(id="clone-checkout-status-gc", kind="steps", params=params, job="", timeout_s=timeout,
                steps=as_steps(steps, "suite git: case clone-checkout-status-gc"))


def expand(profile: str) -> list[Case]:
    """One case, the steps above; the harness repeats it."""
    return [_case(profile)]


SUITE = Suite(
    name="git",
    version=1,
    description="git clone, checkout old/new, status cold/warm, gc of a history made from the kernel tree; s",
    profiles={p: f"linux-source-6.1 {'(all of it)' if d == '.' else d}, {c} commits" for p, (d, c, _) in
              _PROFILES.items()},
    expand=expand,
    headline="real_s",
    headline_unit="s",
    better="lower",
)
