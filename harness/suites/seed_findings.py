"""The seeds' findings that no claim checks, and why fslab cannot measure them. Together with
every suite's claims (harness/suites/*_claims.py) they account for every quantitative or
directional finding of seeds 000-004 (`fslab claims --list --all` prints both and the counts;
tests/test_claims.py checks each quote against its seed). Quotes are verbatim, in the seed's
language (claim.SEED_LANGUAGES); `says` is a faithful English rendering.
"""

from __future__ import annotations

from harness.suites.claim import Finding

NOT_MEASURABLE = (
    Finding("001", "introduction", "se postará o dlouhé minuty či dokonce hodiny",
            "after an outage, fsck of ext2 takes long minutes or even hours",
            "fslab runs the checkers read-only on 512 MiB disks after a simulated crash: how long a repair of a "
            "large disk takes is not measured (pl-ext2-needs-fsck checks that ext2 needs it at all)"),
)
