"""Seed 000's findings ("Comparando os sistemas de arquivos do Linux", Portuguese, 2014: fio on
ext3, ext4, XFS, JFS), read line by line, each with the claims that check it or why it is not
measurable here (harness/suites/seed_findings.py says what counts as a finding)."""

from __future__ import annotations

from harness.suites.claim import RECOVERY_TIME, Finding

NO_CASES = "the text does not say which cases, and its bar chart is not in the seed"

FINDINGS = (
    Finding("000", "BOX 1 (journaling)", "permite ao filesystem ser recuperado rapidamente em caso de falha",
            "journaling lets ext3 recover quickly after a failure",
            why=RECOVERY_TIME),
    Finding("000", "'Conceitos gerais' (sync I/O)", "ao preço de tornar a escrita potencialmente mais lenta",
            "synchronous I/O makes writes potentially slower",
            why="'potentially' is a possibility stated before any test, not a result; the one sync/async comparison "
                "the article reports (Figure 4) is s1-randread-direct-async-2x"),
    Finding("000", "'Conceitos gerais' (async I/O)", "ao preço de uma pequena probabilidade de perda de dados em caso "
                                                     "de falha de energia",
            "asynchronous I/O risks a small chance of data loss at a power failure",
            why="a property of the I/O interface, not of a filesystem; power-loss's workloads write and fsync, "
                "they do not use libaio"),
    Finding("000", "'Conceitos gerais' (direct I/O)", "são mais eficientes do que o cache de filesystem",
            "a database's own cache is more efficient than the filesystem's cache",
            why="no suite compares a database's own cache with the page cache"),
    Finding("000", "Listing 3", "read : io=262144KB, bw=30330KB/s, iops=7582",
            "the Listing 2 job gave 7,582 IOPS (30,330 KB/s)", claims=("s1-listing3-iops",)),
    Finding("000", "Figure 1 (text, point 1)",
            "No caso de múltiplos arquivos pequenos, o acesso com cache foi 40 vezes mais rápido do que o acesso "
            "direto",
            "with many small files, cached sequential reads were 40x faster than direct", claims=("s1-cache-40x",)),
    Finding("000", "Figure 1 (text, point 2)",
            "Certa vantagem do ext3 e do JFS na leitura de poucos arquivos grandes, quando utilizando cache",
            "ext3 and JFS somewhat ahead at cached reads of few large files",
            claims=("s1-fig1-cached-large-ext3-jfs",)),
    Finding("000", "Figure 1 (text, point 2)", "Vantagem esta que desaparece quando utilizado I/O direto",
            "that advantage disappears with direct I/O", claims=("s1-fig1-direct-large-even",)),
    Finding("000", "Figure 1 (text, point 3)",
            "Pequena vantagem do ext3 e do XFS na leitura de múltiplos arquivos pequenos, quando utilizando cache",
            "ext3 and XFS slightly ahead at cached reads of many small files",
            claims=("s1-fig1-cached-small-ext3-xfs",)),
    Finding("000", "Figure 1 (text, point 3)", "mas que também desaparece quando utilizado I/O direto",
            "that advantage also disappears with direct I/O", claims=("s1-fig1-direct-small-even",)),
    Finding("000", "Figure 1 (text, point 4)",
            "O acesso direto a poucos arquivos grandes é aproximadamente 10 vezes mais rápido",
            "direct reads of few large files about 10x faster than of many small files",
            claims=("s1-direct-layout-10x",)),
    Finding("000", "Figure 1 (text)", "de modo geral os resultados são equivalentes, isto é, sem aparentes vencedores",
            "sequential reads: in general equivalent, no apparent winner", claims=("s1-fig1-no-winner",)),
    Finding("000", "Figure 2 (text)", "Novamente o cache tem papel fundamental no desempenho",
            "sequential writes: the cache plays a fundamental role", claims=("s1-fig2-cache-helps-writes",)),
    Finding("000", "Figure 2 (text)", "O ext3 foi muito mais lento nas escritas com arquivos grandes do que os demais",
            "ext3 much slower than the others at writes of large files",
            claims=("s1-ext3-slowest-seq-write-large",)),
    Finding("000", "Figure 2 (text)", "e nas escritas utilizando I/O assíncrono",
            "ext3 also slower at asynchronous (libaio) writes", claims=("s1-fig2-ext3-slowest-async-write",)),
    Finding("000", "Figure 2 (text)", "mas foi mais rápido no caso de acesso a múltiplos arquivos pequenos, com I/O "
                                      "síncrono",
            "but ext3 faster with many small files and synchronous I/O",
            claims=("s1-fig2-ext3-fastest-small-sync-write",)),
    Finding("000", "Figure 2 (text)", "Já os demais filesystems tiveram desempenho equivalente",
            "ext4, XFS and JFS performed equivalently at sequential writes", claims=("s1-fig2-others-even",)),
    Finding("000", "Figure 3 (text)", "o ext3 é razoavelmente mais lento com arquivos grandes",
            "mixed sequential read/write: ext3 reasonably slower with large files (the pattern of Figure 2)",
            claims=("s1-fig3-ext3-slowest-rw-large",)),
    Finding("000", "Figure 3 (text)", "uma pequena vantagem para o ext4 e o xfs em alguns casos",
            "a small advantage for ext4 and XFS in some cases", why=NO_CASES),
    Finding("000", "Figure 4 (text)", "o cache teve participação quase nula no desempenho",
            "random reads: the cache's part was almost nil", claims=("s1-fig4-cache-nil",)),
    Finding("000", "Figure 4 (text)", "inclusive causando degradação de desempenho em alguns casos",
            "the cache even degraded performance in some cases", why=NO_CASES),
    Finding("000", "Figure 4 (text)", "o I/O direto e assíncrono se mostrou quase duas vezes mais rápido",
            "for large and small files, direct asynchronous I/O almost 2x faster",
            claims=("s1-randread-direct-async-2x",)),
    Finding("000", "Figure 5 (text)", "o cache fazendo o seu papel novamente, elevando os números significativamente",
            "random writes: the cache raised the numbers significantly", claims=("s1-fig5-cache-helps-randwrite",)),
    Finding("000", "Figure 5 (text)", "em quase todos os testes o ext4 mostrou certa vantagem em relação aos demais",
            "random writes: ext4 somewhat ahead in almost all tests", claims=("s1-fig5-ext4-ahead-randwrite",)),
    Finding("000", "Figure 5 (text)", "o ext3 apresentou resultados inválidos (0) em dois casos, o que pode indicar "
                                      "algum bug no fio",
            "ext3 gave invalid results (0) in two cases, perhaps a bug in fio",
            why="a fault of fio 2.1.5 on CentOS 6.5, not of a filesystem; fslab keeps such a 0 as a flagged result "
                "(it counts against the filesystem in the rankings) but cannot reproduce that fio"),
    Finding("000", "Figure 5 (text)", "o ext3 teve um desempenho muito abaixo dos demais com cache e arquivos grandes",
            "ext3 far below the others at cached random writes of large files",
            claims=("s1-ext3-slowest-randwrite-cached-large",)),
    Finding("000", "Figure 5 (text)", "mas se saiu muito melhor com múltiplos arquivos pequenos",
            "but ext3 did much better with many small files", claims=("s1-fig5-ext3-best-randwrite-small",)),
    Finding("000", "Figure 6 (text)", "novamente o cache não teve papel importante",
            "mixed random read/write: the cache was not important", claims=("s1-fig6-cache-unimportant",)),
    Finding("000", "Figure 6 (text)", "o ext3 foi o mais lento em quase todos os testes",
            "mixed random read/write: ext3 the slowest in almost all tests", claims=("s1-fig6-ext3-slowest-randrw",)),
    Finding("000", "Figure 7 (text)", "o JFS foi ligeiramente melhor na maioria dos testes",
            "4 parallel jobs: JFS slightly better in most tests", claims=("s1-jfs-best-4jobs",)),
    Finding("000", "Figure 7 (text)", "com o ext4 e o XFS mostrando números parecidos",
            "4 parallel jobs: ext4 and XFS similar", claims=("s1-fig7-ext4-xfs-alike",)),
    Finding("000", "Figure 7 (text)", "o cache fez pouca diferença e o ext3 mais uma vez se mostrou mais lento com "
                                      "cache do que com I/O direto",
            "4 parallel jobs: the cache made little difference, and ext3 was slower cached than direct",
            why="the seed's method gives its 4-job cases direct I/O only, as fio-matrix does: there is no cached 4-job "
                "case to compare (the seed contradicts its own method here)"),
    Finding("000", "conclusion", "ext4, JFS e XFS apresentaram resultados consistentemente melhores do que os "
                                 "apresentados por ext3, com poucas exceções",
            "ext4, JFS and XFS consistently better than ext3, with few exceptions", claims=("s1-ext3-worst-overall",)),
    Finding("000", "conclusion", "e muitas vezes equivalentes entre si",
            "ext4, JFS and XFS often equivalent among themselves", claims=("s1-ext4-jfs-xfs-equal",)),
    Finding("000", "conclusion", "surpreendeu com ótimos números, comparáveis aos do XFS e ext4",
            "JFS surprised with very good numbers, comparable to XFS's and ext4's", claims=("s1-ext4-jfs-xfs-equal",),
            note="the same equality, said of JFS"),
    Finding("000", "conclusion", "apresentaram resultados consistentes com a sua fama",
            "XFS and ext4 gave results consistent with their reputation", why="a reputation is not a measurement"),
)
