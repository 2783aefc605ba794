"""Suite `fio-job`: a user's own fio job file, `fslab run CONFIG --fio-job FILE`.

Not in the suite registry (a vmconfig cannot name it): its one case comes from the file. The case
id is the file's stem, its params hold the file's path, its job the confined text (every path on
the filesystem under test, see harness/plan/fiojob.py) and its timeout is derived from the job's
own runtime, ramp and sizes (harness/plan/fiocost.py), so the guest stops an overlong fio itself
and keeps the sections that finished. Records carry the job section they measure (`section`).
"""

from __future__ import annotations

from harness.errors import FslabError
from harness.plan.fiocost import TCG, Floor, JobCost, case_timeout, job_cost
from harness.plan.fiojob import UserJob, load_user_job, parse
from harness.suites.suite import Case, Suite

PROFILE = "custom-job"


def _expand(profile: str) -> list[Case]:
    raise FslabError("suite fio-job runs a job file; allowed: fslab run CONFIG --fio-job FILE")


SUITE = Suite(
    name="fio-job",
    version=1,
    description="a user's fio job file (fslab run CONFIG --fio-job FILE), one record set per job section",
    profiles={PROFILE: "the job file as given"},
    expand=_expand,
)


def prepare(path: str, deadline_s: int, runs: int = 1, floor: Floor = TCG) -> tuple[Case, UserJob, JobCost]:
    """The case of job file `path`, with what the CLI shows before booting: the UserJob (its
    changes and warnings) and its JobCost (for fiocost.fit). `runs`: how often the case runs in
    the VM (filesystems x repetitions), for its share of the deadline."""
    job = load_user_job(path)
    cost = job_cost(parse(job.text, path), floor)
    case = Case(id=job.case_id, kind="fio", params={"job_file": path}, job=job.text,
                timeout_s=case_timeout(cost, deadline_s, runs))
    return case, job, cost
