"""Study S2's published findings (seed 002, "File system performance for Maildir", 2008) as
claims over maildir records (harness/analysis/claims.py says how they are checked).

The article shows two charts (ms per message read, ms per message delivered, against 1..16
writers, the mean of three runs) and states its findings in words only: no numbers. Overall
comparisons use, in each of the three runs, the geometric mean over the five writer counts
(one value a run: n = 3 at one repetition); the trends compare 16 writers with 1, each pooled
over the three runs. Filesystems: the article's exact options are our variants s2-*.
"""

from __future__ import annotations

from harness.suites.claim import Claim, Fs, Measure, Side

ORDERED = Fs("ext3-ordered", ("ext3-ordered", "s2-ext3-ordered"))
WRITEBACK = Fs("ext3-writeback", ("ext3-writeback", "s2-ext3-writeback"))
JOURNAL = Fs("ext3-journal", ("ext3-journal", "s2-ext3-journal"))
XFS = Fs("xfs", ("xfs", "s2-xfs"), type="xfs")
REISERFS = Fs("reiserfs", ("reiserfs", "s2-reiserfs", "reiserfs-notail"), type="reiserfs", with_option="notail")
JFS = Fs("jfs", ("jfs", "s2-jfs"), type="jfs")
SIX = (ORDERED, WRITEBACK, JOURNAL, XFS, REISERFS, JFS)
SUITE = "maildir"


def overall(metric: str) -> Measure:
    """`metric` of step run, per run the geometric mean over 1, 2, 4, 8 and 16 writers."""
    return Measure(metric, cases=("w*-run*",), steps=("run",), combine="geomean", replicate=("run", "rep"))


def writers(metric: str, n: int) -> Measure:
    """`metric` at n writers, the three runs pooled."""
    return Measure(metric, cases=(f"w{n}-run*",), steps=("run",))


DELIVERY, READ = overall("ms_per_delivery"), overall("ms_per_read")

CLAIMS = (
    Claim(id="s2-ext3-delivery-order", suite=SUITE, kind="order",
          text="ext3 delivery time: writeback < ordered < journal",
          source="seed 002, conclusion (delivery chart)", paper="writeback fastest, then ordered, then journal "
                                                                "(ms per delivery; no numbers)",
          quote="Quem saiu ganhando foi o método writeback, seguido do ordered e do journal",
          says="the winner was the writeback mode, followed by ordered and journal",
          sides=(WRITEBACK, ORDERED, JOURNAL), measure=DELIVERY),
    Claim(id="s2-ext3-ordered-best-read", suite=SUITE, kind="extreme", extreme="best",
          text="of ext3's three journalling modes, ordered had the best read time",
          source="seed 002, conclusion (read chart)", paper="ext3-ordered best of the three modes (no numbers)",
          quote="Quando o assunto é desempenho de leitura, o método ordered justificou o motivo de ser a escolha "
                "padrão, obtendo o melhor resultado nesse critério",
          says="on read performance the ordered mode justified being the default, with the best result",
          sides=(ORDERED, WRITEBACK, JOURNAL), measure=READ,
          note="the sentence compares the three ext3 modes; against ReiserFS: s2-ordered-reads-better-than-reiserfs"),
    Claim(id="s2-ordered-reads-better-than-reiserfs", suite=SUITE, kind="direction",
          text="ReiserFS read worse than ext3-ordered",
          source="seed 002, conclusion (read chart)", paper="ReiserFS 'unexpectedly inferior' (no numbers)",
          quote="a performance de leitura do ReiserFS foi inesperadamente inferior ao método ordered do EXT3",
          says="ReiserFS's read performance was unexpectedly below ext3's ordered mode",
          sides=(ORDERED, REISERFS), measure=READ),
    Claim(id="s2-ordered-reads-better-than-xfs", suite=SUITE, kind="direction",
          text="ext3-ordered read better than XFS (ext3 no longer trails XFS at reading)",
          source="seed 002, conclusion (read chart)", paper="ext3 'surprised' at reading against XFS and ReiserFS "
                                                            "(no numbers)",
          quote="o EXT3 surpreendeu, se respeitarmos o fato dele, até pouco tempo atrás, demonstrar enorme "
                "inferioridade no desempenho de leitura em relação aos sistemas de arquivos XFS e ReiserFS",
          says="ext3 surprised, given that until recently it read enormously worse than XFS and ReiserFS",
          sides=(ORDERED, XFS), measure=READ,
          note="the XFS half of the sentence (the ReiserFS half: s2-ordered-reads-better-than-reiserfs); it says ext3 "
               "no longer trails: 'no significant difference' still fits it, only 'reversed' refutes it"),
    Claim(id="s2-xfs-read-grows", suite=SUITE, kind="direction",
          text="XFS read time grows with the number of writers",
          source="seed 002, conclusion (read chart)",
          paper="'degradation proportional to the number of writers' (no numbers)",
          quote="ele mostrou uma preocupante degradação de performance na leitura de mensagens, proporcional ao "
                "número de processos de escrita simultâneos",
          says="it showed a worrying read degradation, proportional to the number of concurrent writers",
          sides=(Side(XFS, writers("ms_per_read", 1), "xfs, 1 writer"),
                 Side(XFS, writers("ms_per_read", 16), "xfs, 16 writers")),
          tcg="16 writer processes contend for the emulated CPUs, which slows the reader on any filesystem",
          note="1 writer read faster than 16 writers, each pooled over the three runs"),
    Claim(id="s2-reiserfs-read-stable", suite=SUITE, kind="equal",
          text="ReiserFS reads were stable as writers grew",
          source="seed 002, conclusion (read chart)", paper="'stable, without losing performance' (no numbers)",
          quote="A leitura de mensagens demonstrou estabilidade, sem perder performance a medida que aumentava o "
                "número de processos simultâneos de escrita",
          says="reading showed stability, losing no performance as concurrent writers grew",
          sides=(Side(REISERFS, writers("ms_per_read", 16), "reiserfs, 16 writers"),
                 Side(REISERFS, writers("ms_per_read", 1), "reiserfs, 1 writer")),
          band=(0.8, 1.25), note="our tolerance: 16 writers within 25 % of 1 writer"),
    Claim(id="s2-jfs-poor-read", suite=SUITE, kind="extreme", extreme="worst",
          text="JFS was the poorest reader of the six",
          source="seed 002, conclusion (read chart)", paper="JFS 'well inferior' at reading (no numbers)",
          quote="revelou-se bem inferior nos testes de leitura de mensagens",
          says="it proved well inferior in the message-reading tests",
          sides=(JFS, ORDERED, WRITEBACK, JOURNAL, XFS, REISERFS), measure=READ,
          note="the sentence names no reference ('bem inferior nos testes de leitura': well inferior in the "
               "reading tests, hence 'not advisable' for Maildir): read as the worst reader of the six it tested"),
    Claim(id="s2-reiserfs-writes-like-writeback", suite=SUITE, kind="equal",
          text="ReiserFS delivered about as fast as ext3-writeback",
          source="seed 002, conclusion (delivery chart)", paper="'similar to ext3 writeback' (no numbers)",
          quote="O ReiserFS 3.6 teve um bom desempenho de escrita, similar ao método writeback do EXT3",
          says="ReiserFS 3.6 wrote well, similar to ext3's writeback mode",
          sides=(REISERFS, WRITEBACK), measure=DELIVERY, band=(0.8, 1.25),
          note="our tolerance: within 25 %"),
    Claim(id="s2-xfs-best-delivery", suite=SUITE, kind="extreme", extreme="best",
          text="XFS was in general the best performer (delivery)",
          source="seed 002, conclusion", paper="XFS best overall (no numbers)",
          quote="Apesar do XFS, em geral, apresentar o melhor desempenho entre todos os sistemas de arquivos",
          says="although XFS in general performed best of all the filesystems",
          sides=(XFS, ORDERED, WRITEBACK, JOURNAL, REISERFS, JFS), measure=DELIVERY,
          note="'best in general' read as the delivery time, since its reading degrades with writers"),
)
