"""The published web pages that the application suites' claims cite (harness/suites/sqlite_claims.py,
pgbench_claims.py): for each page its URL, date, the setup it ran on as far as the page says, and
the words read from it. Each claim's `quote` is part of its page's `words`
(tests/test_claims_web.py checks this).

What is recorded here: only sentences read in full in a page's text (2026-11-27, through a search
of stored public pages). A page whose finding could not be read is not here, and no claim cites it:
Tomas Vondra's "PostgreSQL on EXT3/4, XFS, BTRFS and ZFS" (slides, pgconf.eu 2015) and "Postgres vs.
File Systems: A Performance Comparison" (EDB blog, 10 October 2022) were found, but only their
opening (the setup) could be read, not a result; dimoulis.net's "Benchmark of Ext4, XFS, Btrfs, ZFS
With PostgreSQL" (a KVM guest, pgbench) was cut off before its btrfs row. For git, no published
comparison of filesystems was found whose words could be read (harness/suites/git.py).

`setup` says what the page and its companion pages (named) say about the machine; "not stated"
where they do not. What differs from fslab's profiles is in each claim's `note`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WebSource:
    """A published comparison on the web that claims cite (`Claim.web`, its key): where it is,
    when, on what, and the words read from it, verbatim (`words`: only sentences read in full; "[...]"
    between the parts of a page left out)."""

    key: str  # "phoronix-2009-sqlite"
    title: str  # the page's title, with its author or site
    date: str  # as the page says it: "29 June 2009"
    url: str
    setup: str  # the source's machine, kernel, disk and settings, as far as the page says (and where)
    words: str  # verbatim sentences of the page


PHORONIX_2009_MACHINE = "Linux 2.6.30, Btrfs 0.19 (on-disk format not final), one SATA hard disk"  # claims' notes
PHORONIX_2009_SETUP = (
    "Linux 2.6.30 on Ubuntu (page 1: 'under Ubuntu using the Linux 2.6.30 kernel'; Btrfs at version 0.19, its "
    "on-disk format not final), one SATA hard disk (page 2: 'the SATA disk here'), every filesystem with its stock "
    "mount settings and Ubuntu's defaults (page 7); the Phoronix Test Suite's tests, their settings not stated")

_SOURCES = (
    WebSource(
        key="phoronix-2009-sqlite",
        title='Phoronix (Michael Larabel), "EXT4, Btrfs, NILFS2 Performance Benchmarks", page 2 of 7',
        date="29 June 2009",
        url="https://www.phoronix.com/review/ext4_btrfs_nilfs2/2",
        setup=PHORONIX_2009_SETUP + "; SQLite: the time of 12,500 insertions (journal mode, synchronous and "
                                    "transaction size not stated)",
        words="With the SQLite test profile to measure how long it takes to perform 12,500 insertions using this "
              "lightweight SQL database, EXT3 and NILFS2 were the clear winner. It took 20 seconds for this database "
              "test to complete under EXT3, 34 seconds under NILFS2, but 870 seconds for EXT4! XFS was at 1312 "
              "seconds and Btrfs was at 1472 seconds!"),
    WebSource(
        key="phoronix-2009-postgresql",
        title='Phoronix (Michael Larabel), "EXT4, Btrfs, NILFS2 Performance Benchmarks", page 3 of 7',
        date="29 June 2009",
        url="http://www.phoronix.com/review/ext4_btrfs_nilfs2/3",
        setup=PHORONIX_2009_SETUP + "; PostgreSQL: the test, its scale and clients not named on the page",
        words="When carrying out more database benchmarking, but this time with PostgreSQL, XFS and Btrfs were too "
              "slow to even complete this test, even when it had been running for more than an hour for a single "
              "run. Between EXT3, EXT4, and NILFS2, the fastest file-system was EXT3 and then its successor, EXT4, "
              "was slightly behind that. Far behind the position of EXT4 were NILFS2 and then Btrfs and XFS."),
    WebSource(
        key="phoronix-2019-sqlite",
        title='Phoronix (Michael Larabel), "Linux 5.0 File-System Benchmarks: Btrfs vs. EXT4 vs. F2FS vs. XFS", '
              'page 2 of 4',
        date="7 January 2019",
        url="https://www.phoronix.com/review/linux-50-filesystems/2",
        setup="Linux 5.0 in development (Git of early January 2019) on an Ubuntu 19.04 snapshot, a Threadripper; "
              "each filesystem 'in their out-of-the-box state / default mount options'; three drives: a 250 GB "
              "Samsung 850 PRO SATA 3.0 SSD, the same SSD through a SATA-to-USB 3.0 adapter, an Intel Optane 900p "
              "280 GB NVMe SSD (page 1); the Phoronix Test Suite's SQLite test, its settings not stated",
        words="For the basic SQLite benchmark, to no surprise Btrfs with its default CoW behavior led to by far the "
              "slowest performance on all three drives. The fastest for the SATA/USB tests was XFS followed quickly "
              "by EXT4 and then F2FS. In the case of the Intel 900p SSD, the XFS results were too fast to accurately "
              "measure while EXT4 and F2FS took just two seconds to complete while Btrfs took six seconds."),
    WebSource(
        key="tnonline-2020-sqlite-btrfs",
        title='wiki.tnonline.net, "Blog/SQLite Performance on Btrfs"',
        date="2020-10-25",
        url="https://wiki.tnonline.net/w/Blog/SQLite_Performance_on_Btrfs",
        setup="AMD Athlon 3000G (2 cores, 4 threads), 8 GB RAM, a Samsung 830 240 GB SSD; btrfs mounted "
              "rw,noatime,compress-force=zstd:2,ssd,space_cache=v2; the Phoronix Test Suite's SQLite-2.1.0 with "
              "1 thread; kernel and synchronous setting not stated",
        words="By using Write-Ahead Logging we can gain a 300% performance boost, compared to about 25-30% increase "
              "using the nocow attribute! [...] Test 1: default options [...] SQLite journal mode: delete [...] "
              "Result: 183.88 seconds [...] Test 3: default options with WAL [...] SQLite journal mode: WAL [...] "
              "Result: 59.73 seconds"),
    WebSource(
        key="ilsistemista-2010-postgresql",
        title='ilsistemista.net (Gionatan Danti), "EXT3 vs EXT4 vs XFS vs BTRFS linux filesystems benchmark", '
              'page "Sysbench: PostgreSQL performance"',
        date="2010 (not in the text read: it ran Fedora 14, released in November 2010)",
        url="https://www.ilsistemista.net/index.php/linux-a-unix/6-linux-filesystems-benchmarked-ext3-vs-ext4-vs-"
            "xfs-vs-btrfs.html?start=5",
        setup="Fedora 14 x86_64 Live CD, its stock kernel 2.6.35.6-45; a Dell D620 (Core2 T7200 2.0 GHz, 4 GB "
              "DDR2), a Seagate ST980825AS 7200 rpm 80 GB SATA hard disk in IDE mode; every filesystem with mkfs "
              "defaults (page 'Testbed and methods', ?start=1); sysbench 0.4.12's OLTP tests on PostgreSQL (version "
              "not stated), the read-write 'complex' one here; write barriers were later found off on ext3 only (the "
              "page's update)",
        words="Can the much more complex, read-write, transactional test draw a different picture? Yes, it can: BTRFS "
              "is now awfully slow, scoring less that ¼ of EXT4 and XFS. EXT3 is the clear winner: it has 4X the "
              "EXT4/XFS performance here (so it is over 16 times faster than BTRFS!). [...] UPDATE: preparing the "
              "system for another benchmark, I noticed that, in contrast to what written in Fedora 14 "
              "documentation, write barriers were non enabled on EXT3 filesystem."),
    WebSource(
        key="ilsistemista-2012-pgbench",
        title='ilsistemista.net (Gionatan Danti), "BTRFS vs EXT3 vs EXT4 vs XFS performance on Fedora 17", '
              'page "Postgresql performance"',
        date="June 2012 (not in the text read: its first comment is of 2012-06-20)",
        url="http://www.ilsistemista.net/index.php/linux-a-unix/33-btrfs-vs-ext3-vs-ext4-vs-xfs-performance-on-"
            "fedora-17.html?start=5",
        setup="Fedora 17 amd64, kernel 3.4.0-1.fc17; a Dell D620 (Core2 T7200 2.0 GHz, 4 GB DDR2), a Seagate "
              "ST980825AS 7200 rpm 80 GB SATA hard disk in IDE mode, a ~60 GB test partition; mkfs defaults (page "
              "'Testbed and methods', ?start=1); write barriers enabled on every filesystem, other mount options "
              "default (the author's comment of 2012-06-20); PostgreSQL 9.1.3; pgbench at scale factor 100, its "
              "clients and duration not stated",
        words="It's time to compare Sysbench results with pgbench ones. First, lets see how much time is needed to "
              "create a test database with scale factor set to 100: [...] It is time of real pgbench performance "
              "results now: [...] Again we see that ext4 is, by far, the true leader, but this time BTRFS secure a "
              "unexpected second place, right before ext3. XFS is the slower here. [...] apart the write barriers "
              "option (which was manually enabled on all filesystems, ext3 included) I left the default mount "
              "options at their default settings."),
)

SOURCES: dict[str, WebSource] = {s.key: s for s in _SOURCES}
