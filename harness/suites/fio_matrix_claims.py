"""Study S1's published findings (seed 000, "Comparing Linux file systems", 2014) as claims over
fio-matrix records (harness/analysis/claims.py says how they are checked).

The article gives its numbers as bar charts (figures 1-7) and one sample output (Listing 3); the
ratios below are the ones its text states ("40 times", "about 10 times", "almost twice"). Its
filesystems were made with mkfs defaults and 4 KiB blocks: our variants s1-ext3 ... s1-jfs, or
a plain ext3 ... jfs. Rankings over several cases use the geometric mean of the cases' IOPS in
each repetition, so that every case weighs alike.
"""

from __future__ import annotations

from harness.suites.claim import MACHINE_MARGIN, Claim, Fs, Measure, Side, Tolerance

EXT3 = Fs("ext3", ("ext3", "s1-ext3"), type="ext3")
EXT4 = Fs("ext4", ("ext4", "s1-ext4"), type="ext4")
XFS = Fs("xfs", ("xfs", "s1-xfs"), type="xfs")
JFS = Fs("jfs", ("jfs", "s1-jfs"), type="jfs")
STUDY = (EXT3, EXT4, XFS, JFS)
SUITE = "fio-matrix"
CACHE_VS_DIRECT = ("cached I/O is memory copies done by the emulated CPU, direct I/O waits on the host's disk: "
                   "TCG slows one side only")
CHART = "read off a bar chart"
EQUAL = (0.8, 1.25)
EQUAL_NOTE = "our tolerance: within 25 % (a ratio in [0.8, 1.25]); the seed gives no number"


def iops(*cases: str) -> Measure:
    """IOPS of these cases, their geometric mean in each repetition."""
    return Measure("iops", cases=cases, combine="geomean")


def _fig(n: int) -> str:
    return f"seed 000, Figure {n} (text)"


def _cache_vs_direct(cid: str, fig: int, kind: str, text: str, paper: str, buffered: str, direct: str, quote: str,
                     says: str) -> Claim:
    """Cached against direct I/O on each filesystem: 'direction' (the cache helps) or 'equal' (it does not)."""
    return Claim(id=cid, suite=SUITE, kind=kind, text=text, source=_fig(fig), paper=paper,
                 sides=(Side(measure=iops(buffered), label="buffered"), Side(measure=iops(direct), label="direct")),
                 for_each=STUDY, tcg=CACHE_VS_DIRECT, quote=quote, says=says,
                 band=EQUAL if kind == "equal" else None, note=EQUAL_NOTE if kind == "equal" else "")


CLAIMS = (
    Claim(id="s1-cache-40x", suite=SUITE, kind="ratio",
          text="with many small files, cached sequential reads were ~40x faster than direct I/O",
          source="seed 000, Figure 1 (text, point 1)", paper="~40x (IOPS buffered / direct; read off a bar chart)",
          quote="No caso de múltiplos arquivos pequenos, o acesso com cache foi 40 vezes mais rápido do que o acesso "
                "direto",
          says="with many small files, cached access was 40 times faster than direct access",
          sides=(Side(measure=iops("read-*-buffered-many-small"), label="buffered"),
                 Side(measure=iops("read-*-direct-many-small"), label="direct")),
          tolerance=Tolerance("40", "1", *MACHINE_MARGIN, figure=True), for_each=STUDY, tcg=CACHE_VS_DIRECT,
          note=f"a round figure in words, {CHART}; sync and libaio cases pooled by their geometric mean"),
    Claim(id="s1-direct-layout-10x", suite=SUITE, kind="ratio",
          text="direct I/O on few large files was ~10x faster than on many small files (sequential reads)",
          source="seed 000, Figure 1 (text, point 4)", paper="~10x (IOPS few-large / many-small, direct)",
          quote="O acesso direto a poucos arquivos grandes é aproximadamente 10 vezes mais rápido do que o acesso a "
                "múltiplos arquivos pequenos",
          says="direct access to few large files is about 10 times faster than to many small files",
          sides=(Side(measure=iops("read-*-direct-few-large"), label="few large"),
                 Side(measure=iops("read-*-direct-many-small"), label="many small")),
          tolerance=Tolerance("10", "1", *MACHINE_MARGIN, figure=True), for_each=STUDY,
          note="a seek effect of the article's 7200 rpm disk"),
    Claim(id="s1-fig1-cached-large-ext3-jfs", suite=SUITE, kind="extreme", extreme="best", top=2,
          text="cached sequential reads of few large files: ext3 and JFS somewhat ahead",
          source="seed 000, Figure 1 (text, point 2)", paper=f"'certa vantagem' ({CHART}, no numbers)",
          quote="Certa vantagem do ext3 e do JFS na leitura de poucos arquivos grandes, quando utilizando cache",
          says="some advantage of ext3 and JFS reading few large files with the cache",
          sides=(EXT3, JFS, EXT4, XFS), measure=iops("read-*-buffered-few-large")),
    Claim(id="s1-fig1-direct-large-even", suite=SUITE, kind="equal",
          text="direct sequential reads of few large files: that advantage disappears (all four alike)",
          source="seed 000, Figure 1 (text, point 2)", paper="'desaparece' (no numbers)",
          quote="Vantagem esta que desaparece quando utilizado I/O direto",
          says="an advantage that disappears with direct I/O",
          sides=STUDY, measure=iops("read-*-direct-few-large"), band=EQUAL, note=EQUAL_NOTE),
    Claim(id="s1-fig1-cached-small-ext3-xfs", suite=SUITE, kind="extreme", extreme="best", top=2,
          text="cached sequential reads of many small files: ext3 and XFS slightly ahead",
          source="seed 000, Figure 1 (text, point 3)", paper=f"'pequena vantagem' ({CHART}, no numbers)",
          quote="Pequena vantagem do ext3 e do XFS na leitura de múltiplos arquivos pequenos, quando utilizando cache",
          says="a small advantage of ext3 and XFS reading many small files with the cache",
          sides=(EXT3, XFS, EXT4, JFS), measure=iops("read-*-buffered-many-small")),
    Claim(id="s1-fig1-direct-small-even", suite=SUITE, kind="equal",
          text="direct sequential reads of many small files: that advantage disappears too (all four alike)",
          source="seed 000, Figure 1 (text, point 3)", paper="'também desaparece' (no numbers)",
          quote="mas que também desaparece quando utilizado I/O direto",
          says="but which also disappears with direct I/O",
          sides=STUDY, measure=iops("read-*-direct-many-small"), band=EQUAL, note=EQUAL_NOTE),
    Claim(id="s1-fig1-no-winner", suite=SUITE, kind="equal",
          text="sequential reads: in general equivalent, no apparent winner",
          source="seed 000, Figure 1 (text)", paper="'sem aparentes vencedores' (no numbers)",
          quote="de modo geral os resultados são equivalentes, isto é, sem aparentes vencedores",
          says="in general the results are equivalent, with no apparent winners",
          sides=STUDY, measure=iops("read-*"), band=EQUAL, note=EQUAL_NOTE + "; the eight read cases"),
    _cache_vs_direct("s1-fig2-cache-helps-writes", 2, "direction",
                     "sequential writes: the cache again plays a fundamental role (cached faster than direct)",
                     "'papel fundamental' (no numbers)", "write-*-buffered-*", "write-*-direct-*",
                     "Novamente o cache tem papel fundamental no desempenho",
                     "again the cache plays a fundamental role in performance"),
    Claim(id="s1-ext3-slowest-seq-write-large", suite=SUITE, kind="extreme", extreme="worst",
          text="ext3 was the slowest at sequential writes of few large files",
          source="seed 000, Figure 2 (text)", paper="ext3 'much slower' than ext4, xfs, jfs (bar chart, no numbers)",
          quote="O ext3 foi muito mais lento nas escritas com arquivos grandes do que os demais",
          says="ext3 was much slower than the others at writes of large files",
          sides=STUDY, measure=iops("write-*-few-large")),
    Claim(id="s1-fig2-ext3-slowest-async-write", suite=SUITE, kind="extreme", extreme="worst",
          text="ext3 was also slower at asynchronous (libaio) sequential writes",
          source="seed 000, Figure 2 (text)", paper="ext3 slower (bar chart, no numbers)",
          quote="e nas escritas utilizando I/O assíncrono", says="and at writes using asynchronous I/O",
          sides=STUDY, measure=iops("write-libaio-*")),
    Claim(id="s1-fig2-ext3-fastest-small-sync-write", suite=SUITE, kind="extreme", extreme="best",
          text="ext3 was faster at synchronous sequential writes of many small files",
          source="seed 000, Figure 2 (text)", paper="ext3 faster (bar chart, no numbers)",
          quote="mas foi mais rápido no caso de acesso a múltiplos arquivos pequenos, com I/O síncrono",
          says="but it was faster with many small files and synchronous I/O",
          sides=STUDY, measure=iops("write-sync-*-many-small")),
    Claim(id="s1-fig2-others-even", suite=SUITE, kind="equal",
          text="sequential writes: ext4, XFS and JFS performed equivalently",
          source="seed 000, Figure 2 (text)", paper="'desempenho equivalente' (no numbers)",
          quote="Já os demais filesystems tiveram desempenho equivalente",
          says="the other filesystems performed equivalently",
          sides=(EXT4, XFS, JFS), measure=iops("write-*"), band=EQUAL, note=EQUAL_NOTE),
    Claim(id="s1-fig3-ext3-slowest-rw-large", suite=SUITE, kind="extreme", extreme="worst",
          text="mixed sequential read/write: ext3 reasonably slower with large files",
          source="seed 000, Figure 3 (text)", paper="ext3 'razoavelmente mais lento' (bar chart, no numbers)",
          quote="o ext3 é razoavelmente mais lento com arquivos grandes",
          says="ext3 is reasonably slower with large files",
          sides=STUDY, measure=iops("rw-*-few-large")),
    Claim(id="s1-randread-direct-async-2x", suite=SUITE, kind="ratio",
          text="on random reads, direct asynchronous I/O was almost 2x faster than cached synchronous I/O",
          source="seed 000, Figure 4 (text)", paper="almost 2x (IOPS, for large and small files)",
          quote="Tanto para arquivos grandes como pequenos, o I/O direto e assíncrono se mostrou quase duas vezes "
                "mais rápido",
          says="for large and small files alike, direct asynchronous I/O was almost twice as fast",
          sides=(Side(measure=iops("randread-libaio-direct-*"), label="direct libaio"),
                 Side(measure=iops("randread-sync-buffered-*"), label="buffered sync")),
          tolerance=Tolerance("2", "1", *MACHINE_MARGIN, figure=True, almost=True), for_each=STUDY,
          tcg=CACHE_VS_DIRECT,
          note="'faster' than what the article leaves open: we take the default mode, cached and synchronous; "
               "both layouts pooled; fio's default iodepth 1, as the article's"),
    _cache_vs_direct("s1-fig4-cache-nil", 4, "equal", "random reads: the cache's part was almost nil",
                     "'participação quase nula' (no numbers)", "randread-sync-buffered-*", "randread-sync-direct-*",
                     "o cache teve participação quase nula no desempenho",
                     "the cache had an almost nil part in performance"),
    _cache_vs_direct("s1-fig5-cache-helps-randwrite", 5, "direction",
                     "random writes: the cache raised the numbers significantly (cached faster than direct)",
                     "'elevando os números significativamente' (no numbers)", "randwrite-*-buffered-*",
                     "randwrite-*-direct-*", "o cache fazendo o seu papel novamente, elevando os números "
                                             "significativamente",
                     "the cache doing its job again, raising the numbers significantly"),
    Claim(id="s1-fig5-ext4-ahead-randwrite", suite=SUITE, kind="extreme", extreme="best",
          text="random writes: ext4 showed some advantage over the others in almost all tests",
          source="seed 000, Figure 5 (text)", paper="ext4 'certa vantagem' (bar chart, no numbers)",
          quote="em quase todos os testes o ext4 mostrou certa vantagem em relação aos demais",
          says="in almost all tests ext4 showed some advantage over the others",
          sides=(EXT4, EXT3, XFS, JFS), measure=iops("randwrite-*"),
          note="'almost all' read as the eight cases by their geometric mean"),
    Claim(id="s1-ext3-slowest-randwrite-cached-large", suite=SUITE, kind="extreme", extreme="worst",
          text="ext3 was far below the others at cached random writes of few large files",
          source="seed 000, Figure 5 (text)", paper="ext3 'far below' the others (bar chart, no numbers)",
          quote="o ext3 teve um desempenho muito abaixo dos demais com cache e arquivos grandes",
          says="ext3 performed far below the others with the cache and large files",
          sides=STUDY, measure=iops("randwrite-*-buffered-few-large")),
    Claim(id="s1-fig5-ext3-best-randwrite-small", suite=SUITE, kind="extreme", extreme="best",
          text="random writes: ext3 did much better with many small files (cached)",
          source="seed 000, Figure 5 (text)", paper="ext3 'muito melhor' (bar chart, no numbers)",
          quote="mas se saiu muito melhor com múltiplos arquivos pequenos",
          says="but did much better with many small files",
          sides=STUDY, measure=iops("randwrite-*-buffered-many-small"),
          note="'much better' read as better than the others, with the cache (the sentence's contrast); the seed "
               "reports ext3 at 0 IOPS in two random-write cases, which it blames on fio"),
    _cache_vs_direct("s1-fig6-cache-unimportant", 6, "equal", "mixed random read/write: the cache was not important",
                     "'o cache não teve papel importante' (no numbers)", "randrw-sync-buffered-*[el]",
                     "randrw-sync-direct-*[el]", "novamente o cache não teve papel importante",
                     "again the cache played no important part"),
    Claim(id="s1-fig6-ext3-slowest-randrw", suite=SUITE, kind="extreme", extreme="worst",
          text="mixed random read/write: ext3 was the slowest in almost all tests",
          source="seed 000, Figure 6 (text)", paper="ext3 slowest (bar chart, no numbers)",
          quote="o ext3 foi o mais lento em quase todos os testes", says="ext3 was the slowest in almost all tests",
          sides=STUDY, measure=iops("randrw-*-many-small", "randrw-*-few-large")),
    Claim(id="s1-ext3-worst-overall", suite=SUITE, kind="extreme", extreme="worst",
          text="ext4, JFS and XFS were consistently better than ext3",
          source="seed 000, conclusion", paper="ext3 worst 'with few exceptions' over the 50 cases",
          quote="ext4, JFS e XFS apresentaram resultados consistentemente melhores do que os apresentados por ext3",
          says="ext4, JFS and XFS gave consistently better results than ext3",
          sides=STUDY, measure=iops("*"),
          note="all 50 cases by their geometric mean"),
    Claim(id="s1-ext4-jfs-xfs-equal", suite=SUITE, kind="equal",
          text="ext4, JFS and XFS were often equal among themselves",
          source="seed 000, conclusion", paper="'often equivalent' (no numbers)",
          quote="e muitas vezes equivalentes entre si", says="and often equivalent among themselves",
          sides=(EXT4, JFS, XFS), measure=iops("*"), band=EQUAL,
          note="our tolerance: within 25 % (a ratio in [0.8, 1.25]) on the geometric mean of all 50 cases"),
    Claim(id="s1-jfs-best-4jobs", suite=SUITE, kind="extreme", extreme="best",
          text="with 4 parallel jobs (random read/write, direct), JFS was slightly better in most tests",
          source="seed 000, Figure 7 (text)", paper="JFS 'slightly better', ext4 and XFS similar (bar chart)",
          quote="o JFS foi ligeiramente melhor na maioria dos testes",
          says="JFS was slightly better in most of the tests",
          sides=(JFS, EXT3, EXT4, XFS), measure=iops("randrw-*-direct-few-large-4jobs"),
          note="the seed contradicts itself: its method gives the 4-job cases direct I/O only, while its Figure 7 "
               "text speaks of cached results ('o cache fez pouca diferença'); we follow the method (direct)"),
    Claim(id="s1-fig7-ext4-xfs-alike", suite=SUITE, kind="equal",
          text="with 4 parallel jobs, ext4 and XFS showed similar numbers",
          source="seed 000, Figure 7 (text)", paper="'números parecidos' (no numbers)",
          quote="com o ext4 e o XFS mostrando números parecidos", says="with ext4 and XFS showing similar numbers",
          sides=(EXT4, XFS), measure=iops("randrw-*-direct-few-large-4jobs"), band=EQUAL, note=EQUAL_NOTE),
    Claim(id="s1-listing3-iops", suite=SUITE, kind="absolute",
          text="Listing 3: the Listing 2 job (sequential 4 KiB synchronous cached reads, 200 files, 256 MB) "
               "gave 7,582 IOPS",
          source="seed 000, Listings 2 and 3", paper="7,582 IOPS (30,330 KB/s), one run, filesystem not named",
          quote="read : io=262144KB, bw=30330KB/s, iops=7582",
          sides=STUDY, measure=Measure("iops", cases=("read-sync-buffered-many-small",)),
          note="Listing 3's output says '2 file(s) / 256MB' although Listing 2 sets nrfiles=200: we take Listing 2"),
)
