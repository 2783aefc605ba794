"""The inventory of the seeds' findings: every quantitative or directional finding of seeds
000-004, read line by line, one entry each (seed, a short verbatim quote, where in the seed, what
it says in English), mapped to the claims that check it (harness/suites/*_claims.py) or to why
fslab cannot measure it. `fslab claims --list --all` prints it and counts it ("N findings: C checked
by claims, M not measurable"); tests/test_claims.py checks that every claim checks some finding,
that every finding has claims or a reason, that every claim id named exists and that every quote
is its seed's words verbatim.

What counts as a finding: a result, a conclusion or a statement about a filesystem's speed or
reliability that says a number or a direction (X faster than Y, X grows with N, X loses data),
whether from the study's own tests or stated as known. Not findings: the method (what was run
and how), the hardware, opinions without a direction ("boring", "interesting"), popularity,
features, advice, and readers' comments below an article. A table row, or one command's output
on one filesystem, is one finding; a finding restated elsewhere in its seed is not a new one
(its entry's note names the restatement). Quotes are verbatim in the seed's language
(claim.SEED_LANGUAGES); `says` renders them in English.
"""

from __future__ import annotations

from harness.suites import seed000_findings, seed001_findings, seed002_findings, seed003_findings, seed004_findings
from harness.suites.claim import Finding

FINDINGS: tuple[Finding, ...] = (seed000_findings.FINDINGS + seed001_findings.FINDINGS + seed002_findings.FINDINGS +
                                 seed003_findings.FINDINGS + seed004_findings.FINDINGS)
NOT_MEASURABLE: tuple[Finding, ...] = tuple(f for f in FINDINGS if not f.checked)
