"""What a filesystem checker's exit code says, per tool, from each tool's documented exit codes;
and the automatic "preen" that a boot would run, where the tool has one.

A read-only check gives one of four verdicts, counted apart:
- clean: nothing found;
- fixed by preen: something found that the tool's automatic boot-time mode repairs by itself
  (only e2fsck documents such a mode that refuses what needs a human: `-p`; the check is re-run
  with it on the throwaway snapshot to tell);
- needs repair: errors a human must repair (or, for a tool without a preen mode, any error found);
- checker failed: the tool did not check (operational or usage error, a signal, its timeout, not
  found): says nothing about the filesystem.

The documented exit codes (the tools' man pages):
- e2fsck(8): "0 No errors, 1 File system errors corrected, 2 File system errors corrected, system
  should be rebooted, 4 File system errors left uncorrected, 8 Operational error, 16 Usage or
  syntax error, 32 E2fsck canceled by user request, 128 Shared library error" (the sum of them);
  with -p: "If e2fsck discovers a problem which may require the system administrator to take
  additional corrective action, e2fsck will print a description of the problem and then exit with
  the value 4 logically or'ed into the exit code."
- xfs_repair(8): "xfs_repair -n (no modify mode) will return a status of 1 if filesystem
  corruption was detected and 0 if no filesystem corruption was detected"; "If xfs_repair is
  unable to proceed due to a dirty log, it will return a status of 2". XFS has no preen (fsck.xfs
  does nothing; the mount replays the log).
- btrfs-check(8): "btrfs check returns a zero exit status if it succeeds. Non zero is returned in
  case of failure": 1 both for errors found and for a filesystem it could not open, told apart by
  its output ("cannot open", "No valid Btrfs found"). A filesystem it could not open because a
  tree block failed its checksum or address check ("bad tree block", "checksum verify failed")
  is damage it found, not a failure of the checker: needs repair. No preen (fsck.btrfs does
  nothing).
- fsck.f2fs (f2fs-tools since 1.14, lib/fsck.h): the fsck(8) codes, FSCK_ERRORS_LEFT_UNCORRECTED 4,
  FSCK_OPERATIONAL_ERROR 8; older versions -1 (255) on any failure. Its -a/-p only checks when the
  kernel flagged a bug: no preen that tells safe repairs apart.
- fsck.jfs / jfs_fsck (jfsutils, fsck/xchkdsk.c): "success FSCK_OK (0), log successfully
  replayed / errors corrected FSCK_CORRECTED (1), errors uncorrected FSCK_ERRORS_UNCORRECTED (4),
  operational error FSCK_OP_ERROR (8), usage error FSCK_USAGE_ERROR (16)". Its -p repairs all it
  finds ("Repair all problems automatically"), so it is no preen in the sense above.
- reiserfsck(8): "0 No errors, 1 File system errors corrected, 2 Reboot is needed, 4 File system
  fatal errors left uncorrected, reiserfsck should be run with --rebuild-tree, 6 File system
  fixable errors left uncorrected, reiserfsck should be run with --fix-fixable, 8 Operational
  error, 16 Usage or syntax error". Both 4 and 6 need a human to run the repair.
Anything else, and exit 124 (fslab's timeout) or 127 (not found), is "checker failed"; but e2fsck
-n that answered no to a fix it needs to go on and stopped ("Salvage? no", "e2fsck: aborted", exit
12: 8 | 4, seen on ext2's crash images with a corrupted directory block) found damage: needs
repair (and the preen is asked, as for any e2fsck finding).

The preen by e2fsck's problem table (`preen_by_table`): where e2fsck -n exits 4 having found only
pass 5's summary differences (block and inode bitmap differences, free block, free inode and
directory counts, bitmap padding), every one of them is PR_PREEN_OK in e2fsck's problem table
(e2fsck/problem.c, PR_5_*): the boot's preen fixes them by itself, so the verdict is "fixed by
preen" without a second e2fsck run (the dearest part of an ext2 point under TCG, issue 24 item 11).
check.py still runs the preen at 1 in PREEN_SAMPLE of those points, and where the crash image did
not mount (the preened image is then mounted for the promises after it); at a mounted point that
broke a promise, the promises after the preen are those before it, by the same table. The record
says whether the preen agreed with the table, and where it did not, its own exit code gives the
verdict.
"""

from __future__ import annotations

import os
import re

CLEAN, PREEN, REPAIR, FAILED = "clean", "fixed by preen", "needs repair", "checker failed"
VERDICTS = (CLEAN, PREEN, REPAIR, FAILED)
TIMEOUT_RC, NOT_FOUND_RC = 124, 127  # fslabguest.commands.run_cmd

# tool -> ({exit code: (verdict, what the tool says)}, the preen argv with {dev} or None)
_FSCK8 = {0: (CLEAN, "no errors"), 1: (REPAIR, "errors corrected (by a read-only check?)"),
          2: (REPAIR, "errors corrected, reboot"), 4: (REPAIR, "errors left uncorrected"),
          8: (FAILED, "operational error"), 16: (FAILED, "usage or syntax error"),
          32: (FAILED, "canceled"), 128: (FAILED, "shared library error")}
TOOLS: dict[str, tuple[dict[int, tuple[str, str]], list[str] | None]] = {
    "e2fsck": (_FSCK8, ["e2fsck", "-f", "-p", "{dev}"]),
    "xfs_repair": ({0: (CLEAN, "no corruption"), 1: (REPAIR, "corruption detected"),
                    2: (REPAIR, "dirty log: the mount must replay it (or xfs_repair -L)")}, None),
    "btrfs": ({0: (CLEAN, "no error"), 1: (REPAIR, "errors found")}, None),
    "fsck.f2fs": ({**_FSCK8, 255: (FAILED, "failure (-1)")}, None),
    "fsck.jfs": ({0: (CLEAN, "no errors"), 1: (REPAIR, "log replayed or errors corrected"),
                  2: (REPAIR, "reboot"), 4: (REPAIR, "errors left uncorrected"), 8: (FAILED, "operational error"),
                  16: (FAILED, "usage error")}, None),
    "reiserfsck": ({0: (CLEAN, "no errors"), 1: (REPAIR, "errors corrected"), 2: (REPAIR, "reboot needed"),
                    4: (REPAIR, "fatal errors left uncorrected: --rebuild-tree"),
                    6: (REPAIR, "fixable errors left uncorrected: --fix-fixable"),
                    8: (FAILED, "operational error"), 16: (FAILED, "usage or syntax error")}, None),
}
FSCK8_SUMS = {"e2fsck", "fsck.ext2", "fsck.ext3", "fsck.ext4", "fsck.f2fs", "fsck.jfs", "jfs_fsck"}  # codes add up
TOOLS["jfs_fsck"] = TOOLS["fsck.jfs"]
TOOLS["fsck.reiserfs"] = TOOLS["reiserfsck"]
E2FSCK = ("e2fsck", "fsck.ext2", "fsck.ext3", "fsck.ext4")  # one program, under each name
for _ext in E2FSCK[1:]:
    TOOLS[_ext] = TOOLS["e2fsck"]
E2FSCK_DECLINED_ABORT = "e2fsck: aborted"  # -n answered no to a fix it needed to go on ("Salvage? no")
BTRFS_NOT_OPENED = ("cannot open", "no valid btrfs found", "could not open")
BTRFS_BAD_TREE = ("bad tree block", "checksum verify failed")  # what it found, by address
PREEN_SAMPLE = 8  # the preen still runs where the table decided at points whose index is a multiple of it
# pass 5's findings, all PR_PREEN_OK in e2fsck/problem.c, as e2fsck -n prints them
E2FSCK_PASS5_PREEN_OK = re.compile("|".join((
    r"(Block|Inode) bitmap differences: [-+()0-9 ]*",
    r"Free (blocks|inodes) count wrong( for group #\d+)? \(\d+, counted=\d+\)\.",
    r"Directories count wrong for group #\d+ \(\d+, counted=\d+\)\.",
    r"Padding at end of (inode|block) bitmap is not set\. *(Fix\? no)?",
    r"Fix\? no",
    r"\S+: \*+ WARNING: Filesystem still has errors \*+",
    r"\S+: \d+/\d+ files \([0-9.]+% non-contiguous\), \d+/\d+ blocks")))
E2FSCK_BEFORE_PASS5 = re.compile(r"e2fsck \S+ \(.*\)|Pass [1-4][A-D]?: .*")  # the version line and pass headers


def tool_of(argv: list[str]) -> str:
    return os.path.basename(argv[0]) if argv else ""


def classify(argv: list[str], rc: int, output: str = "") -> tuple[str, str]:
    """(verdict, why) of one read-only checker run, from its tool's documented exit codes.

    >>> classify(["e2fsck", "-f", "-n", "/dev/x"], 4)
    ('needs repair', 'e2fsck exit 4: errors left uncorrected')
    >>> classify(["e2fsck", "-f", "-n", "/dev/x"], 8)
    ('checker failed', 'e2fsck exit 8: operational error')
    >>> classify(["e2fsck", "-f", "-n", "/dev/x"], 12)[0], classify(["xfs_repair", "-n", "d"], 124)
    ('checker failed', ('checker failed', 'xfs_repair exit 124: timed out'))
    >>> classify(["e2fsck", "-f", "-n", "/dev/x"], 12, "directory corrupted; Salvage? no; e2fsck: aborted")[0]
    'needs repair'
    >>> classify(["btrfs", "check", "--readonly", "d"], 1, "ERROR: cannot open file system")[0]
    'checker failed'
    >>> classify(["btrfs", "check", "--readonly", "d"], 1, "bad tree block 30982144, bytenr mismatch; "
    ...          "ERROR: cannot open file system")[0]
    'needs repair'
    """
    tool = tool_of(argv)
    if rc == 0:
        return CLEAN, f"{tool} exit 0"
    if rc == TIMEOUT_RC:
        return FAILED, f"{tool} exit {rc}: timed out"
    if rc == NOT_FOUND_RC or rc < 0:
        return FAILED, f"{tool} exit {rc}: " + ("not found" if rc == NOT_FOUND_RC else "killed by a signal")
    codes, _ = TOOLS.get(tool, ({}, None))
    if tool == "btrfs" and rc == 1 and any(s in output.lower() for s in BTRFS_NOT_OPENED):
        if any(s in output.lower() for s in BTRFS_BAD_TREE):
            return REPAIR, "btrfs exit 1: the filesystem could not be opened: a tree block is corrupt"
        return FAILED, "btrfs exit 1: the filesystem could not be opened"
    if rc in codes:
        verdict, what = codes[rc]
        return verdict, f"{tool} exit {rc}: {what}"
    if tool in E2FSCK and rc & 12 == 12 and E2FSCK_DECLINED_ABORT in output and "? no" in output:
        return REPAIR, (f"{tool} exit {rc}: damage a read-only check may not pass (it answered no to a fix it needs "
                        "to go on, then aborted)")
    if tool in FSCK8_SUMS:  # fsck(8)'s codes add up: any of 8 and above is an error of the checker
        if rc & ~7:
            return FAILED, f"{tool} exit {rc}: operational error (bits {rc & ~7} of fsck(8)'s codes)"
        return REPAIR, f"{tool} exit {rc}: errors left uncorrected"
    if not codes:
        return REPAIR, f"{tool} exit {rc}: not clean (no documented exit codes known for {tool})"
    return FAILED, f"{tool} exit {rc}: not one of its documented exit codes"


def preen_by_table(argv: list[str], rc: int, output: str) -> str:
    """Why the preen fixes what e2fsck -n found, by e2fsck's problem table, or "" where the preen
    must be run to tell (anything but pass 5's summary differences, another tool, another exit code).

    >>> out = ("e2fsck 1.47.0 (5-Feb-2023)\\nPass 1: Checking inodes, blocks, and sizes\\n"
    ...        "Pass 5: Checking group summary information\\nBlock bitmap differences:  +66050 +(66560--66565)\\n"
    ...        "Fix? no\\n\\nFree blocks count wrong for group #0 (7919, counted=7918).\\nFix? no\\n\\n"
    ...        "/dev/dm-1: ********** WARNING: Filesystem still has errors **********\\n\\n"
    ...        "/dev/dm-1: 11/32768 files (9.1% non-contiguous), 2161/131072 blocks\\n")
    >>> preen_by_table(["e2fsck", "-f", "-n", "d"], 4, out)[:60]
    "e2fsck -n found only pass 5's summary differences (bitmaps, "
    >>> entry = "Entry 'a' has deleted/unused inode 12.\\nPass 5"
    >>> preen_by_table(["e2fsck", "-f", "-n", "d"], 4, out.replace("Pass 5", entry))
    ''
    >>> preen_by_table(["e2fsck", "-f", "-n", "d"], 12, out), preen_by_table(["xfs_repair", "-n", "d"], 4, out)
    ('', '')
    """
    if tool_of(argv) not in E2FSCK or rc != 4:
        return ""
    head, sep, tail = output.partition("\nPass 5: ")
    if not sep or not all(E2FSCK_BEFORE_PASS5.fullmatch(ln.strip()) for ln in head.splitlines() if ln.strip()):
        return ""
    lines = [ln.strip() for ln in tail.splitlines()[1:] if ln.strip()]
    if not lines or not all(E2FSCK_PASS5_PREEN_OK.fullmatch(ln) for ln in lines):
        return ""
    return ("e2fsck -n found only pass 5's summary differences (bitmaps, counts), each PR_PREEN_OK in e2fsck's "
            "problem table: the boot's preen fixes them by itself")


def preen_argv(argv: list[str]) -> list[str] | None:
    """The automatic boot-time repair of the checker's tool, with {dev}, or None."""
    return TOOLS.get(tool_of(argv), ({}, None))[1]


def classify_preen(rc: int) -> tuple[str, str]:
    """After a read-only check found errors: what e2fsck -p did with them (its documented codes).

    >>> classify_preen(1), classify_preen(4)[0], classify_preen(8)[0]
    (('fixed by preen', 'e2fsck -p exit 1: errors corrected'), 'needs repair', 'checker failed')
    """
    if rc in (1, 2, 3):
        return PREEN, f"e2fsck -p exit {rc}: errors corrected"
    if rc == 0:  # found nothing where -n found something: the read-only run's finding stands
        return REPAIR, "e2fsck -p exit 0 after -n found errors: the read-only finding stands"
    if rc < 0 or rc & ~7 or rc in (TIMEOUT_RC, NOT_FOUND_RC):
        return FAILED, f"e2fsck -p exit {rc}: the preen itself failed"
    return REPAIR, f"e2fsck -p exit {rc}: errors a human must repair"
