"""The studies' remarks on power loss as claims over power-loss records (harness/analysis/claims.py
says how they are checked). None of the studies measured a crash: seed 001 and seed 003 report
experience, seed 004 hearsay ("I can only take the word of those who suffered"), seed 002 the
theory of ext3's journalling modes. What fslab can judge of each:

- seed 001: after an outage ext2 needs fsck (minutes to hours), a journaling filesystem does
  not. Judged: the share of crash points whose read-only checker is not clean after the mount's
  journal replay, whether the boot's automatic preen fixes it or a human must (points_not_clean_pct:
  both mean an fsck run at boot), ext2 the worst of ext2 and the journaling
  filesystems the seed names (ext3, ReiserFS) plus ext4, XFS and JFS. Not judged: how long fsck
  takes (we run it on 512 MiB disks, read-only).
- seed 003: fsck.jfs may stop with "CANNOT CONTINUE" and the partition no longer mounts. An
  anecdote without numbers: JFS's shares of unmountable crash points and of points needing
  repair are shown beside it, never judged (kind absolute). We run fsck.jfs read-only, so a
  repair that fails is not seen.
- seed 004: XFS without write barriers lost data at power loss. XFS lost its nobarrier option in
  Linux 4.19, so the kernels fslab runs cannot show it; ext4 with barrier=0 stands in for "a
  journaling filesystem without barriers": fewer promises broken with barriers than without.
  Under fslab's crash model a filesystem without flushes keeps nothing after mkfs (the upper
  bound of its loss), so the direction would hold by construction: it tests nothing, and the
  claim is context (both values shown, never judged).
- seed 002 (theory): ext3 data=journal is the most reliable, data=ordered a middle ground,
  data=writeback may leave garbage in files written during the crash. Judged as an order of
  promises broken (every kind, the unpromised rename-without-fsync included, where the modes
  differ), journal before ordered before writeback.

Values: one per workload case (the positive control apart): maildir, replace-fsync,
replace-nofsync, append, churn, mix; a smoke run (maildir only) has one value a filesystem and is
untested. The totals are the records without a `kind` (Measure.detail "").
"""

from __future__ import annotations

from harness.suites import power_loss
from harness.suites.claim import Claim, Fs, Measure

SUITE = power_loss.SUITE.name
WORKLOADS = tuple(power_loss.program().WORKLOADS)  # the workload cases (not the control)

EXT2 = Fs("ext2", type="ext2")
EXT3 = Fs("ext3", ("ext3-ordered", "ext3"), type="ext3", without_option="data=writeback")
EXT3_ORDERED = Fs("ext3-ordered", ("ext3-ordered",), type="ext3", with_option="data=ordered")
EXT3_WRITEBACK = Fs("ext3-writeback", ("ext3-writeback",), type="ext3", with_option="data=writeback")
EXT3_JOURNAL = Fs("ext3-journal", ("ext3-journal",), type="ext3", with_option="data=journal")
EXT4 = Fs("ext4", ("ext4",), type="ext4", without_option="barrier=0")
EXT4_NOBARRIER = Fs("ext4-nobarrier", ("ext4-nobarrier",), type="ext4", with_option="barrier=0")
XFS = Fs("xfs", type="xfs")
JFS = Fs("jfs", type="jfs")
REISERFS = Fs("reiserfs", type="reiserfs")


def per_workload(metric: str) -> Measure:
    """`metric` of every workload case (not the control), its total line only: one value a case,
    paired across filesystems by workload and repetition (every filesystem runs the same ones)."""
    return Measure(metric, cases=WORKLOADS, steps=("run",), detail="", pair_by=("case", "rep"))


CLAIMS = (
    Claim(id="pl-ext2-needs-fsck", suite=SUITE, kind="extreme", extreme="worst",
          text="after a power loss ext2 needs fsck; a journaling filesystem does not",
          source="seed 001, introduction", paper="ext2: minutes or even hours of fsck after an outage (no numbers)",
          quote="Jeden dva nečekané výpadky proudu a trošku větší disk, či disků vícero, se postará o dlouhé minuty či "
                "dokonce hodiny, kdy se ponejvíce utilitka fsck snaží zkontrolovat stav vašich dat",
          says="one or two unexpected power cuts and a bigger disk mean long minutes or even hours of fsck",
          sides=(EXT2, EXT3, REISERFS, EXT4, XFS, JFS), measure=per_workload("points_not_clean_pct"),
          note="share of mounted crash points whose read-only checker is not clean after the journal replay (fixed "
               "by preen or needing repair; a checker that failed is in neither), paired by workload; how long fsck "
               "takes is not measured"),
    Claim(id="pl-jfs-cannot-continue", suite=SUITE, kind="absolute",
          text="fsck.jfs may stop with 'CANNOT CONTINUE' and the partition no longer mounts",
          source="seed 003, update note", paper="'CANNOT CONTINUE'; the partition stops mounting (no numbers)",
          quote="llegará el momento que no puedas montar la partición",
          says="the time will come when you cannot mount the partition",
          sides=(JFS,), measure=per_workload("points_unmountable_pct"),
          note="our fsck.jfs runs read-only (-n): a repair that fails is not seen"),
    Claim(id="pl-jfs-needs-repair", suite=SUITE, kind="absolute",
          text="fsck.jfs does not recover from every error",
          source="seed 003, update note", paper="fsck.jfs does not recover from all errors (no numbers)",
          quote="sus utilidades de recuperación (fsck.jfs) no recuperan de todos los errores del sistema",
          says="its recovery tools (fsck.jfs) do not recover from every error",
          sides=(JFS,), measure=per_workload("points_needing_repair_pct")),
    Claim(id="pl-barriers-keep-data", suite=SUITE, kind="absolute",
          text="without write barriers a journaling filesystem loses data at power loss (said of XFS): "
               "holds by construction here, so shown, not judged",
          source="seed 004, introduction (hearsay)",
          paper="XFS without barriers: high chance of data loss (no numbers)",
          quote="была высока вероятность потери данных при некорректном завершении работы",
          says="the probability of data loss at an unclean shutdown was high",
          sides=(EXT4, EXT4_NOBARRIER), measure=per_workload("promises_broken"),
          note="XFS has no nobarrier since Linux 4.19: ext4 barrier=0 stands in; under fslab's crash model "
               "nothing written without a flush survives, so the direction holds by construction and tests nothing: "
               "the values are context"),
    Claim(id="pl-ext3-modes-order", suite=SUITE, kind="order",
          text="ext3 data=journal is the most reliable, data=ordered a middle ground, data=writeback the least",
          source="seed 002, 'Journaling'", paper="journal > ordered > writeback in reliability (theory, no numbers)",
          quote="Esse método é considerado um meio-termo aceitável entre confiabilidade e performance",
          says="this mode [ordered] is considered an acceptable middle ground between reliability and performance",
          sides=(EXT3_JOURNAL, EXT3_ORDERED, EXT3_WRITEBACK), measure=per_workload("promises_broken"),
          higher_is_better=False,
          note="promises broken of every kind whatever backs it (posix, linux-convention, and the fs-heuristic rename "
               "without fsync, where the modes differ), paired by workload"),
)
