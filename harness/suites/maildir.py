"""Suite `maildir`: study S2, "File system performance for Maildir" (seed 002, 2008), after Bruce
Guenter's fsbench (2004).

The article's procedure, per filesystem: make and mount it; create a directory tree of 100,000
Maildir mailboxes; run 1 reader alongside 1 writer, wait for both, `sync`; repeat with 2, 4, 8
and 16 writers. All of that three times: twice for 2 minutes a step and once for 10 minutes; the
figures plot the mean of the three runs, ms per message read and ms per message delivered (the
mean over writer processes) against the number of writers. The workload is our program
`fslab-maildir` (harness/guest/fslab_maildir.py), which states its own choices (the protocol,
the tree's layout, message sizes, how the reader picks mailboxes).

One case per (run, writers), in the article's order: w1-run1, w2-run1, ... w16-run1, w1-run2, ...
Params: run (1..3), writers, duration (s), mailboxes. Steps:
1. `setup` (untimed): the run's tree ROOT = {mnt}/maildir-run<run>. It is idempotent: the first
   case of a run makes the tree, the others find it. Where the article is vague, our choice: the
   steps of one run share one tree, so the messages delivered with 1 writer are still there when
   2 writers start, as fsbench repeated only its delivery/read step on the tree it had made
   ("the previous steps are repeated with 2, 4, 8 and 16 writers"). A fresh tree per case would
   give every case an empty store and lose that growth, which the article names as the reason
   read times change with the number of writers.
2. `run` (timed, "parse": "metrics"): N writers + 1 reader for the duration, then sync(2) inside
   the program; its JSON lines become records, the headline `ms_per_delivery`.
3. `sync` (untimed), as fsbench's script did after each step.
4. `cleanup` (untimed, last case of a run only): `rm -rf` the run's tree, so that the next run
   starts on an empty filesystem as the article's did after mkfs. The filesystem is not made
   again between runs (fslab makes each filesystem once per boot): later runs see an aged one.
Every case starts cold (the agent remounts and drops caches before it); fsbench went straight
from one step to the next, so its reader began warm. Seeds: the tree's placement seed is 1 in
every run; a case's workload seed is 100 * run + writers, the same on every filesystem so that
filesystems are compared on the same sequence of deliveries.

Profiles keep the 15 cases and scale the mailboxes and the durations by one factor, so the
messages per mailbox stay about the same on equal hardware: paper 1, quick 1/10, smoke 1/100.
The harness repeats nothing by default (reps 1 in every profile): the article's repetitions are
its three runs, which differ in length and so are cases. Asked for more (--reps), the harness
runs all 15 cases again as a round; each round makes and removes its own trees, as above.
"""

from __future__ import annotations

from harness.suites.suite import Case, Suite
from harness.suites.suite import steps as as_steps

PROGRAM = "/usr/local/bin/fslab-maildir"
WRITERS = (1, 2, 4, 8, 16)
RUN_SECONDS = (120, 120, 600)  # the article: 2 min, 2 min, 10 min
MAILBOXES = 100_000
TREE_SEED = 1

_PROFILES = {
    # profile: (scale of mailboxes and durations, time allowed beyond the duration per case)
    "paper": (1, 3600),  # set-up of 400,000 directories and rm -rf of millions of messages
    "quick": (0.1, 900),
    "smoke": (0.01, 240),  # TCG: 17 Python processes start slowly
}


def case_id(writers: int, run: int) -> str:
    """'w4-run2'."""
    return f"w{writers}-run{run}"


def _seconds(x: float) -> int | float:
    """120 * 0.1 is 12 (an int in argv and params, not 12.000000000000002), 120 * 0.01 is 1.2."""
    x = round(float(x), 3)
    return int(x) if x.is_integer() else x


def _case(run: int, writers: int, profile: str) -> Case:
    scale, slack = _PROFILES[profile]
    mailboxes = round(MAILBOXES * scale)
    duration = _seconds(RUN_SECONDS[run - 1] * scale)
    root = f"{{mnt}}/maildir-run{run}"
    steps: list[dict] = [
        {"name": "setup", "timed": False,
         "argv": [PROGRAM, "setup", "--root", root, "--mailboxes", str(mailboxes), "--seed", str(TREE_SEED)]},
        {"name": "run", "parse": "metrics",
         "argv": [PROGRAM, "run", "--root", root, "--writers", str(writers), "--duration", str(duration),
                  "--seed", str(100 * run + writers)]},
        {"name": "sync", "timed": False, "argv": ["sync"]},
    ]
    if writers == WRITERS[-1]:
        steps.append({"name": "cleanup", "timed": False, "argv": ["rm", "-rf", root]})
    params = {"run": run, "writers": writers, "duration": duration, "mailboxes": mailboxes}
    return Case(id=case_id(writers, run), kind="steps", params=params, job="",
                timeout_s=int(duration) + slack, steps=as_steps(steps, "suite maildir"))


def expand(profile: str) -> list[Case]:
    """15 cases: runs 1..3, each with 1, 2, 4, 8 and 16 writers, in the article's order."""
    return [_case(run, w, profile) for run in (1, 2, 3) for w in WRITERS]


SUITE = Suite(
    name="maildir",
    version=1,
    description="study S2: Maildir delivery (N writers) and reading (1 reader), N = 1..16, 3 runs",
    profiles={
        "paper": "100,000 mailboxes; runs of 2, 2 and 10 min per step; 15 cases (~70 min of load per fs)",
        "quick": "10,000 mailboxes; 12, 12 and 60 s per step; 15 cases (~7 min of load per fs)",
        "smoke": "1,000 mailboxes; 1.2, 1.2 and 6 s per step; 15 cases (tests and CI, TCG)",
    },
    expand=expand,
    headline="ms_per_delivery",
    headline_unit="ms",
    better="lower",
    reps={profile: 1 for profile in _PROFILES},
    redo_why="the study's runs follow one another on one filesystem, which ages between them, as the article's did",
)
