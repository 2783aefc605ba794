"""Seed 001's findings ("Ext2, XFS, ReiserFS - který je lepší?", Czech, 2001, translating a
Universitat de les Illes Balears study), read line by line, each with the claims that check it
or why it is not measurable here (harness/suites/seed_findings.py says what counts as a finding)."""

from __future__ import annotations

from harness.suites.claim import ONE_KERNEL, Finding

T119 = "table 119, row "
MONGO = ("mongo-reiserfs-small-fastest", "mongo-reiserfs-large-slowest")

FINDINGS = (
    Finding("001", "introduction", "se postará o dlouhé minuty či dokonce hodiny",
            "after an outage, fsck of ext2 takes long minutes or even hours", claims=("pl-ext2-needs-fsck",),
            note="that ext2 needs fsck is checked; how long it takes is not (checkers run read-only on 512 MiB "
                 "disks after a simulated crash)"),
    Finding("001", "introduction", "Reiser nebyl ve stavu stoprocentně odladěném",
            "the ReiserFS beta was not fully debugged: it could lose the data it was meant to save",
            why="a beta of 2000: " + ONE_KERNEL),
    Finding("001", "'Žurnálovací souborový systém'", "obnova dat a jejich kontrola tak trvá řádově zlomky času "
                                                      "nutného pro kontrolu a obnovu klasickou cestou",
            "after a crash a journaling filesystem recovers in a fraction of the classic check's time",
            why="recovery time is not measured; power-loss judges whether a repair is needed (pl-ext2-needs-fsck)"),
    Finding("001", "'Žurnálovací souborový systém'", "Na 486-ce zlepšení příliš neočekávejte",
            "journaling costs CPU and memory: on a 486 expect little gain",
            why="every vmconfig fixes its CPU and memory; no claim compares machines"),
    Finding("001", "introduction of the translation", "ReiserFS vyspěl do stabilní spolehlivé verze",
            "ReiserFS has matured into a stable, reliable version",
            why=ONE_KERNEL),
    Finding("001", "introduction of the translation", "není žádný jasný vítěz. V něčem je lepší XFS, v něčem zase "
                                                       "ReiserFS",
            "there is no clear winner: XFS is better at some things, ReiserFS at others",
            claims=("s4-random-xfs-fastest", "s3-cp-order"),
            note="its two halves: XFS ahead of ReiserFS at random.c (table 120), ReiserFS ahead of XFS at cp -a "
                 "(table 119)"),
    Finding("001", "introduction of the translation", "oba jsou lepší než Ext2 díky žurnálovacím schopnostem",
            "both are better than ext2 thanks to journaling", claims=("s3-ext2-worst-overall", "pl-ext2-needs-fsck")),
    Finding("001", "introduction of the translation",
            "Výborné je, že linuxové buffer/cache operace jsou velmi výrazně pozitivně ovlivněné",
            "Linux's buffer/cache helps every result a lot (compiling, copying, random writes and reads): buy more "
            "memory", why="each vmconfig fixes the guest's memory: no suite compares memory sizes"),
    Finding("001", "Mongo benchmark", "pro malé soubory (100 až 1000B) ReiserFS nejrychlejší",
            "on the slow machine, ReiserFS was the fastest for small files (100-1000 B)",
            claims=("mongo-reiserfs-small-fastest",)),
    Finding("001", "Mongo benchmark", "zatímco pro velké soubory byl extrémně pomalý",
            "and extremely slow for large files", claims=("mongo-reiserfs-large-slowest",)),
    Finding("001", "Mongo benchmark", "„Průměrná“ velikost souborů v dnešních distribucích je kolem 16KB",
            "the average file in today's distributions is about 16 KB",
            why="a fact about Linux distributions of 2001, not about a filesystem"),
    Finding("001", "Mongo benchmark", "lze říci, že se mnohem více blížily k výsledkům dalších testů",
            "on the faster machine the Mongo results came much closer to the other tests",
            why="it names no measure and no number; the qualifier is attached to both Mongo claims instead"),
    Finding("001", "'Kompilace linuxového jádra'", "využívání volných částí sektorů pro data jiného souboru (dále "
                                                    "označováno jako tail) může snížit výkonnost",
            "tails (another file's data in a sector's free part) may lower performance",
            claims=("s3-notail-faster-cp",)),
    Finding("001", T119 + "cp -a", "cp -a /usr/linux /mnt/ 8.57 29.40 4.81 5.99 5.49 6.45 2.55 17.90",
            "cp -a of the tree: CPU / real seconds on XFS, ReiserFS notail, ReiserFS, ext2",
            claims=("s3-t119-cp-real", "s3-t119-cp-cpu", "s3-cp-order", "s3-notail-faster-cp")),
    Finding("001", T119 + "make bzImage", "make bzImage 289.24 292.067 289.33 291.14 289.38 297.27 288.99 293.69",
            "make bzImage: CPU / real seconds (XFS and ext2 within 2 %)",
            claims=("s3-t119-make-real", "s3-t119-make-cpu", "s3-make-within-2pct")),
    Finding("001", T119 + "make clean", "make clean 1.00 1.37 0.50 0.50 0.50 0.50 0.44 0.46",
            "make clean: CPU / real seconds (XFS the slowest)",
            claims=("s3-t119-make-clean-real", "s3-t119-make-clean-cpu", "s3-make-clean-xfs-slowest")),
    Finding("001", T119 + "rm -rf", "rm -rf /mnt/linux 2.14 11.41 1.06 1.07 1.05 1.05 0.19 0.19",
            "rm -rf: CPU / real seconds (XFS 60x ext2; XFS slowest, ext2 fastest)",
            claims=("s3-t119-rm-real", "s3-t119-rm-cpu", "s3-rm-xfs-60x-ext2", "s3-rm-xfs-slowest",
                    "s3-rm-ext2-fastest")),
    Finding("001", "table 119", "Díky cache byly velké rozdíly v měření prvního cp a proto je bylo nutno vícekrát "
                                "opakovat",
            "the first cp varied a lot because of the cache, so it had to be repeated",
            why="a remark on their method; fslab's kernel-tree warms the source tree before the timed copy"),
    Finding("001", "'Test náhodného zápisu'", "navzdory velmi pomalému kopírování pod XFS",
            "XFS copied very slowly", claims=("s3-cp-order",)),
    Finding("001", "'Test náhodného zápisu'", "jsou si velmi blízké stran wall času a CPU času",
            "apart from XFS's slow copy, the filesystems were very close in wall and CPU time",
            why="an overall impression that table 119 contradicts (rm: 11.41 vs 0.19 s); the table's rows are claims"),
    Finding("001", "table 120, row CPU", "CPU 1.30 1.55 1.16", "random.c: CPU seconds on XFS, ReiserFS notail, ext2",
            claims=("s4-t120-cpu",)),
    Finding("001", "table 120, row Real", "62.50 66.91 65.32", "random.c: real seconds (XFS the fastest)",
            claims=("s4-t120-real", "s4-random-xfs-fastest", "s4-random-xfs-8pct")),
    Finding("001", "conclusion", "Zaznamenal jsem rozdílné výsledky pro různou velikost zpracovávaných souborů",
            "results differed with the size of the files (Mongo)", claims=MONGO),
    Finding("001", "conclusion", "V případě kompilace jádra měla Ext2 velmi malý výkon při kopírování souborů",
            "in the kernel compilation, ext2 copied files very slowly", claims=("s3-cp-order",)),
    Finding("001", "conclusion", "V jiných testech je ReiserFS s notail nastavením vítězem",
            "in the other tests ReiserFS with notail is the winner",
            why="the text names no test, and its own table 119 has ext2 ahead of it at make clean and rm -rf; where "
                "the table shows it first (cp -a) s3-cp-order checks it"),
    Finding("001", "conclusion", "rozdíl pro make bzImage činí pouhá 2%",
            "ext2 and XFS often very close: make bzImage only 2 % apart", claims=("s3-make-within-2pct",)),
    Finding("001", "conclusion", "se ziskem 8% na ReiserFS zvítězil XFS",
            "random.c: XFS won, 8 % ahead of ReiserFS", claims=("s4-random-xfs-fastest", "s4-random-xfs-8pct")),
    Finding("001", "conclusion", "za běžných podmínek mají XFS a ReiserFS vyšší výkonnost než Ext2",
            "under normal conditions XFS and ReiserFS perform better than ext2", claims=("s3-ext2-worst-overall",)),
    Finding("001", "conclusion", "a navíc ještě poskytují výhody žurnálování",
            "and they give the advantages of journaling besides", claims=("pl-ext2-needs-fsck",)),
    Finding("001", "conclusion", "oba jsou velmi stabilní a rozdíly mezi nimi jsou minimální, téměř neexistující",
            "ReiserFS and XFS are both very stable and the differences between them minimal",
            why="stability over time is not measured, and 'minimal differences' names no measure (table 119 shows "
                "large ones)"),
)
