"""The seeds' findings that no claim checks, and why fslab cannot measure them. Together with
every suite's claims (harness/suites/*_claims.py) they account for every quantitative or
directional finding of seeds 000-004 about filesystems (`fslab claims --list --all` prints both
and the counts; tests/test_claims.py checks each quote against its seed when the seeds are at
hand). Quotes are verbatim, in the seed's language (claim.SEED_LANGUAGES); `says` renders them
in English.
"""

from __future__ import annotations

from harness.suites.claim import Finding

ONE_KERNEL = "fslab runs one kernel and one version of each filesystem: a change over the years cannot be seen"

NOT_MEASURABLE = (
    # seed 000 (Portuguese, 2014): fio on ext3, ext4, XFS, JFS
    Finding("000", "Figure 3 (text)", "uma pequena vantagem para o ext4 e o xfs em alguns casos",
            "a small advantage for ext4 and XFS in some cases",
            "the text does not say which cases, and its bar chart is not in the seed"),
    Finding("000", "Figure 4 (text)", "inclusive causando degradação de desempenho em alguns casos",
            "the cache even degraded performance in some cases",
            "the text does not say which cases, and its bar chart is not in the seed"),
    Finding("000", "Figure 5 (text)", "o ext3 apresentou resultados inválidos (0) em dois casos, o que pode indicar "
                                      "algum bug no fio",
            "ext3 gave invalid results (0) in two cases, perhaps a bug in fio",
            "a fault of fio 2.1.5 on CentOS 6.5, not of a filesystem; fslab keeps such a 0 as a flagged result "
            "(it counts against the filesystem in the rankings) but cannot reproduce that fio"),
    Finding("000", "Figure 7 (text)", "o cache fez pouca diferença e o ext3 mais uma vez se mostrou mais lento com "
                                      "cache do que com I/O direto",
            "the cache made little difference, and ext3 was again slower cached than direct",
            "the seed's method gives its 4-job cases direct I/O only, as fio-matrix does: there is no cached 4-job "
            "case to compare (the seed contradicts its own method here)"),
    Finding("000", "conclusion", "apresentaram resultados consistentes com a sua fama",
            "XFS and ext4 gave results consistent with their reputation", "a reputation is not a measurement"),
    # seed 001 (Czech, 2001): ext2, XFS, ReiserFS
    Finding("001", "introduction", "se postará o dlouhé minuty či dokonce hodiny",
            "after an outage, fsck of ext2 takes long minutes or even hours",
            "fslab runs the checkers read-only on 512 MiB disks after a simulated crash: how long a repair of a "
            "large disk takes is not measured (pl-ext2-needs-fsck checks that ext2 needs it at all)"),
    Finding("001", "'Žurnálovací souborový systém'", "obnova dat a jejich kontrola tak trvá řádově zlomky času "
                                                      "nutného pro kontrolu a obnovu klasickou cestou",
            "after a crash a journaling filesystem recovers in a fraction of the classic check's time",
            "recovery time is not measured (see above); power-loss judges whether a repair is needed"),
    Finding("001", "'Žurnálovací souborový systém'", "Na 486-ce zlepšení příliš neočekávejte",
            "journaling costs CPU and memory: on a 486 expect little gain",
            "every vmconfig fixes its CPU and memory; no claim compares machines"),
    Finding("001", "introduction of the translation", "kupte si více paměti a jděte do žurnálování ASAP",
            "buffer/cache operations help every result a lot: buy more memory",
            "each vmconfig fixes the guest's memory: no suite compares memory sizes"),
    Finding("001", "Mongo benchmark", "lze říci, že se mnohem více blížily k výsledkům dalších testů",
            "on the faster machine the Mongo results came much closer to the other tests",
            "it names no measure and no number; the qualifier is attached to both Mongo claims instead"),
    Finding("001", "table 119", "Díky cache byly velké rozdíly v měření prvního cp a proto je bylo nutno vícekrát "
                                "opakovat",
            "the first cp varied a lot because of the cache, so it had to be repeated",
            "a remark on their method; fslab's kernel-tree warms the source tree before the timed copy"),
    Finding("001", "'Test náhodného zápisu'", "jsou si velmi blízké stran wall času a CPU času",
            "apart from XFS's slow copy, the filesystems were very close in wall and CPU time",
            "an overall impression that table 119 contradicts (rm: 11.41 vs 0.19 s); the table's rows are claims"),
    Finding("001", "conclusion", "V jiných testech je ReiserFS s notail nastavením vítězem",
            "in the other tests ReiserFS with notail is the winner",
            "the text does not say which tests; where table 119 shows it (cp) s3-cp-order checks it"),
    Finding("001", "conclusion", "oba jsou velmi stabilní a rozdíly mezi nimi jsou minimální, téměř neexistující",
            "ReiserFS and XFS are both very stable and the differences between them minimal",
            "stability over time is not measured, and 'minimal differences' names no measure (table 119 shows "
            "large ones)"),
    # seed 002 (Portuguese, 2008): maildir
    Finding("002", "conclusion", "mesmo com uma boa performance de escrita",
            "JFS had good write performance", "'good' names no reference filesystem and no number to check"),
    Finding("002", "conclusion", "o EXT3 mostrou uma grande evolução", "ext3 improved a lot since the 2004 tests",
            ONE_KERNEL),
    Finding("002", "conclusion", "O sistema de arquivos XFS mostrou praticamente os mesmos resultados",
            "XFS gave practically the same results as in 2004", ONE_KERNEL),
    Finding("002", "conclusion", "O ReiserFS 3 parece não ter demonstrado muita evolução",
            "ReiserFS 3 has not improved much", ONE_KERNEL),
    Finding("002", "conclusion", "o XFS pode não ser a melhor escolha para servidores de e-mail de larga escala",
            "XFS may not suit large mail servers with mailboxes of gigabytes",
            "an extrapolation to mailboxes of gigabytes; fslab's maildir holds far fewer messages"),
    Finding("002", "'Maildir vs Mbox'", "pode sofrer ao tentar ler essas mesmas mensagens no formato Maildir",
            "a filesystem good at reading Mbox may suffer reading the same messages as Maildir",
            "no suite stores Mbox"),
    Finding("002", "system details", "aumenta o desempenho em um cenário onde ocorrem vários acessos simultâneos",
            "noatime raises performance under concurrent access",
            "every maildir filesystem is mounted noatime, as the seed's: no claim compares atime settings"),
    Finding("002", "method", "Essa é uma configuração recomendada para aumentar o desempenho de escrita",
            "a separate journal device raises write performance",
            "the seed did not test it either, and no fslab variant puts the journal on another disk"),
    # seed 003 (Spanish, 2007): JFS vs XFS
    Finding("003", "update note", "es más inestable con el tiempo", "JFS is more unstable over time",
            "aging over months of use is not simulated"),
    Finding("003", "introduction", "ya me sorprendió por su velocidad al iniciar el sistema",
            "JFS surprised the author by its boot speed", "booting from the filesystem under test is not measured"),
    Finding("003", "conclusion", "en kernels linux recientes se ha mejorado la velocidad del sistema XFS",
            "recent kernels made XFS faster, which would narrow these differences", ONE_KERNEL),
    Finding("003", "conclusion", "el sistema más probado es el EXT3 (y también el más lento de los 3 sistemas "
                                 "mencionados)",
            "ext3 is the most proven and also the slowest of the three",
            "the seed measured no ext3, and study S3's vmconfig has none: nothing to compare with"),
    Finding("003", "hardware", "el primero puede estar algo fragmentado",
            "the JFS disk may be slightly fragmented (2 %)", "fslab's filesystems are made fresh for every run"),
    Finding("003", "conclusion", "Aunque el XFS también tiene algún que otro fallo",
            "XFS has its faults too (see its mailing lists)", "no measure or number"),
    # seed 004 (Russian, 2014): ZFS vs XFS
    Finding("004", "introduction", "производительность XFS на некоторых операциях деградировала просто катастрофически",
            "with write barriers XFS slowed down catastrophically on some operations",
            "XFS cannot turn barriers off since Linux 4.19, so there is nothing to compare with"),
    Finding("004", "introduction", "неотъемлемой слабостью XFS во всей её предшествовавшей жизни была работа с "
                                   "большим количеством маленьких файлов",
            "XFS's lasting weakness was many small files", ONE_KERNEL),
    Finding("004", "conclusion", "разработчикам XFS действительно удалось преодолеть «врождённый порок»",
            "XFS's developers overcame its birth defect with small files", ONE_KERNEL),
    Finding("004", "introduction", "XFS и «многочленные» устройства (Multiple devices) были созданы друг для друга",
            "XFS and multi-disk devices were made for each other",
            "fslab's md RAID stripes virtual disks backed by one host's storage: a multi-disk gain would not be "
            "the hardware's"),
    Finding("004", "introduction", "мощь на более чем однодисковых пулах", "ZFS is strong on multi-disk pools",
            "as above: virtual disks on one host's storage"),
    Finding("004", "table 2", "раздел с XFS на HDD 500 ГБ с интерфейсом SATA-II",
            "XFS on an HDD was the slow 'as usual' case (table 2's HDD column)",
            "fslab's disks are alike by design; the HDD column is shown as context in the s5-t2-* rows"),
    Finding("004", "conclusion", "ранее сравнения с ZFS на FreeBSD и близко не показывали такого превосходства XFS",
            "earlier comparisons with ZFS on FreeBSD showed nothing like this", "fslab's guests run Linux only"),
    Finding("004", "conclusion", "как утверждается, наступает при 16 ГБ памяти",
            "ZFS reportedly shines with 16 GB of memory", "file-ops fixes the guest's memory (8 GiB, the seed's)"),
    Finding("004", "conclusion", "весьма быстрой по субъективным ощущениям, если сравнивать её с ext4 или btrfs",
            "ZFS feels fast compared with ext4 or btrfs", "an impression; file-ops has no ext4 or btrfs"),
    Finding("004", "conclusion", "её реализация для Linux’а никогда не блистала выдающимися качествами",
            "JFS on Linux never shone", "no measure; file-ops has no JFS"),
)
