"""Seed 004's findings ("Сравнение мужей: ZFS vs XFS", Russian, 2014), read line by line, each with
the claims that check it or why it is not measurable here (harness/suites/seed_findings.py says
what counts as a finding). Table 2's rows are one finding each."""

from __future__ import annotations

from harness.suites.claim import ONE_KERNEL, Finding

MULTI_DISK = ("fslab's md RAID stripes virtual disks backed by one host's storage: a multi-disk gain would not be "
              "the hardware's")
EVERY = "s5-xfs-every-distance"


def _row(step: str, line: str, says: str, *claims: str) -> Finding:
    return Finding("004", f"table 2, row {line.split()[0]} {line.split()[1]}", line, says,
                   claims=(f"s5-t2-{step}", *claims, EVERY))


FINDINGS = (
    Finding("004", "introduction", "была высока вероятность потери данных при некорректном завершении работы",
            "XFS built for speed (no barriers) was likelier than any other journaling filesystem to lose data at an "
            "unclean shutdown", claims=("pl-barriers-keep-data",),
            note="shown as context: under fslab's crash model the direction holds by construction"),
    Finding("004", "introduction", "производительность XFS на некоторых операциях деградировала просто катастрофически",
            "with write barriers XFS slowed down catastrophically on some operations",
            why="XFS cannot turn barriers off since Linux 4.19, so there is nothing to compare with"),
    Finding("004", "introduction", "когда на заре её карьеры в Linux она была действительно весьма быстрой",
            "early in its Linux career XFS was really fast", why=ONE_KERNEL),
    Finding("004", "introduction", "неотъемлемой слабостью XFS во всей её предшествовавшей жизни была работа с "
                                   "большим количеством маленьких файлов",
            "XFS's lasting weakness was many small files", why=ONE_KERNEL),
    Finding("004", "introduction", "хотя и не столь явно, как в периоды предпочтения сохранности",
            "XFS's small-file weakness was milder when it was tuned for speed than when tuned for safety (barriers)",
            why="XFS cannot turn barriers off since Linux 4.19; and the weakness is its past, " + ONE_KERNEL),
    Finding("004", "introduction", "где-то выигрывая у сестёр-конкуренток, типа ReiserFS, где-то проигрывая им",
            "on one disk XFS was level with its contemporaries, winning here and losing there against ReiserFS",
            claims=("s4-random-xfs-fastest", "s3-cp-order"),
            note="the author's earlier tests are not given: checked on seed 001's single-disk workloads, XFS ahead of "
                 "ReiserFS at random.c and behind it at cp -a"),
    Finding("004", "introduction", "XFS и «многочленные» устройства (Multiple devices) были созданы друг для друга",
            "XFS and multi-disk devices (md RAID, LVM) were made for each other", why=MULTI_DISK),
    Finding("004", "introduction", "слабость при работе с большим количеством мелких файлов (особенно их удаление)",
            "ZFS is weak with many small files, especially at deleting them",
            claims=("s5-cp-portage-2x", "s5-unpack-portage-2x", "s5-rm-portage-4x"),
            note="against XFS on portage's many small files; 'especially deletion': rm has the largest ratio, 3.7x"),
    Finding("004", "introduction", "мощь на более чем однодисковых пулах", "ZFS is strong on multi-disk pools",
            why=MULTI_DISK),
    Finding("004", "set-up", "раздел с XFS на HDD 500 ГБ с интерфейсом SATA-II",
            "XFS on an HDD was the slow 'as usual' case (table 2's HDD column)",
            why="fslab's disks are alike by design; the HDD column is shown as context in the s5-t2-* rows"),
    Finding("004", "set-up", "«быстрее только в раю» — на файловой системе tmpfs",
            "tmpfs, 'faster only in paradise', is the absolute zero", claims=("s5-tmpfs-fastest",)),
    _row("unpack-linux", "Разворачивание linux 8 6 8 6", "unpacking linux: 8, 6, 8, 6 s",
         "s5-unpack-linux-xfs-faster"),
    _row("unpack-portage", "Разворачивание portage 12 5 15 4", "unpacking portage: 12, 5, 15, 4 s",
         "s5-unpack-portage-2x"),
    _row("cp-video", "Копирование DBDRip 72 49 220", "copying the film: 72, 49, 220 s",
         "s5-cp-video-1.5x", "s5-big-copies-slow-down"),
    _row("cp-dvd", "Копирование DVD 30 20 95", "copying the DVD image: 30, 20, 95 s",
         "s5-cp-dvd-1.5x", "s5-big-copies-slow-down"),
    _row("cp-cd", "Копирование CD 3 1 8 0", "copying the CD image: 3, 1, 8, 0 s",
         "s5-cp-cd-xfs-faster", "s5-big-copies-slow-down"),
    _row("cp-linux", "Копирование linux 14 7 25 0", "copying the linux tree: 14, 7, 25, 0 s",
         "s5-cp-linux-2x", "s5-tmpfs-fastest"),
    _row("cp-portage", "Копирование portage 37 17 72 0", "copying the portage tree: 37, 17, 72, 0 s",
         "s5-cp-portage-2x", "s5-tmpfs-fastest"),
    _row("rm-linux", "Удаление linux 2 1 1 0", "deleting the linux tree: 2, 1, 1, 0 s", "s5-rm-linux-xfs-faster"),
    _row("rm-portage", "Удаление portage 11 3 3 1", "deleting the portage tree: 11, 3, 3, 1 s", "s5-rm-portage-4x"),
    Finding("004", "text (unpacking)", "процессорная составляющая тут тоже имеет место быть",
            "unpacking is partly CPU work (tmpfs is barely faster)",
            why="a reading of table 2 that explains, not a result: the unpacking claims carry it in their notes"),
    Finding("004", "text (unpacking)", "на XFS оно происходит быстрее, чем на ZFS",
            "unpacking is faster on XFS than on ZFS", claims=("s5-unpack-linux-xfs-faster", "s5-unpack-portage-2x")),
    Finding("004", "text (unpacking)", "в случае портежей — более чем в два раза",
            "for portage, more than twice as fast", claims=("s5-unpack-portage-2x",)),
    Finding("004", "text (copying files)", "регрессивно замедляется с увеличением их объёма",
            "copying big files slows down as they grow", claims=("s5-big-copies-slow-down",)),
    Finding("004", "text (copying files)", "полуторакратное превосходство XFS над ZFS сохраняется для двух «старших» "
                                           "случаев",
            "XFS's 1.5x advantage over ZFS holds for the two biggest files",
            claims=("s5-cp-video-1.5x", "s5-cp-dvd-1.5x")),
    Finding("004", "text (copying files)", "к трехкратному превышению скорости для случая копирования объёма компакта",
            "the 3x for the CD image is hard to take seriously (small absolute values)",
            claims=("s5-cp-cd-xfs-faster",)),
    Finding("004", "text (copying trees)", "показывает  устойчиво двукратное превосходство XFS на ZFS",
            "copying the trees: a steady twofold advantage of XFS over ZFS",
            claims=("s5-cp-linux-2x", "s5-cp-portage-2x")),
    Finding("004", "text (deleting)", "во всех прочих оно исчезающе мало",
            "deleting the single files takes vanishingly little time",
            why="'vanishingly small' is below the article's 1 s cut-off on its machine: an absolute time, never judged "
                "on another machine (file-ops records those rm steps)"),
    Finding("004", "text (deleting)", "несколько быстрее для XFS",
            "the linux tree is deleted almost at once on both, somewhat faster on XFS",
            claims=("s5-rm-linux-xfs-faster",)),
    Finding("004", "text (deleting)", "для ZFS почти в четыре раза большим",
            "deleting portage takes almost 4x longer on ZFS", claims=("s5-rm-portage-4x",)),
    Finding("004", "conclusion", "разработчикам XFS действительно удалось преодолеть «врождённый порок»",
            "XFS's developers overcame its birth defect with small files", why=ONE_KERNEL),
    Finding("004", "conclusion", "она обойдёт соперницу «на всех дистанциях»",
            "XFS beat ZFS 'at every distance', by a notable or crushing margin", claims=(EVERY,),
            note="restated below: XFS 'незаурядно быстрой', ZFS lost 'с разгромным счётом'"),
    Finding("004", "conclusion", "ранее сравнения с ZFS на FreeBSD и близко не показывали такого превосходства XFS",
            "earlier comparisons with ZFS on FreeBSD showed nothing like this", why="fslab's guests run Linux only"),
    Finding("004", "conclusion", "как утверждается, наступает при 16 ГБ памяти",
            "ZFS reportedly shines with 16 GB of memory", why="file-ops fixes the guest's memory (8 GiB, the seed's)"),
    Finding("004", "conclusion", "её реализация для Linux’а никогда не блистала выдающимися качествами",
            "JFS on Linux never shone", why="no measure; file-ops has no JFS"),
    Finding("004", "conclusion", "удалось местами превзойти «абсолютный ноль» в виде tmpfs",
            "Tux3 reportedly beat tmpfs in places", why="Tux3 is in no kernel fslab runs"),
    Finding("004", "conclusion", "ZFS — тоже не медленная в ряду перечисленных файловых систем",
            "ZFS too is not slow among the filesystems listed (ext4, btrfs, ReiserFS, JFS)",
            why="no measure, and file-ops has none of those filesystems"),
    Finding("004", "conclusion", "весьма быстрой по субъективным ощущениям, если сравнивать её с ext4 или btrfs",
            "ZFS feels fast compared with ext4 or btrfs", why="an impression; file-ops has no ext4 or btrfs"),
)
