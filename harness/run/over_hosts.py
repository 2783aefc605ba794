"""One run spread over several libvirt hosts (`fslab run CONFIG --host URI --host URI ...`).

The unit spread over the hosts is a whole boot: every filesystem of the plan, in its interleaved
rounds, as `--boots` runs them one after another (harness/run/boots.py `boot_plan`), so each
host's comparison of the filesystems is within that host (issue 30). The run has K boots (`--boots
K`; by default one per host); each host runs one boot at a time (its `slots`), taking the next
from a shared queue, so a faster host simply runs more of them. Before any boot every host is
probed (its accelerator and machine facts); hosts that differ are refused unless the user allows
mixing them. A host that fails (unreachable, its daemon gone, the connection lost mid-run) takes
no more boots; the boot it was running has its cases marked failed with the host's error, or,
with `retry`, runs again on another host. A boot that never started on a failed host goes back
to the queue. Nothing already gathered is lost, and the run always finishes. The run directory
is a `--boots` run's, each boot and record saying its host:

    <run-id>/manifest.json     the first boot's manifest, with the whole plan (repeat.boots = K),
                               status and reason, "boots": [{boot, host, status, reason, attempts,
                               ...}], "hosts": [{uri, status, error, boots, accel, facts}], "spread"
    <run-id>/results.jsonl     every boot's records, each with its "boot" and the "host" that ran it
    <run-id>/raw/              every boot's raw files, hard-linked (as --boots)
    <run-id>/boots/b<k>/       each boot's own run directory (an earlier attempt: b<k>.attempt<j>)

The analysis then uses the hierarchy: each host's mean of its boots is one value (stats.level_values,
Kalibera & Jones 2013), and the report says how much the hosts differ (design.py).
"""

from __future__ import annotations

import json
import os
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import FslabError
from harness.image import store as images
from harness.plan.document import Plan
from harness.results.jsonl import read_jsonl, write_jsonl
from harness.results.records import records_for_run
from harness.run import boots as boots_mod
from harness.run import runner
from harness.vm import hosts, libvirt, live, owner

Log = Callable[[str], None]


def boot_plans(plan: Plan, k: int) -> list[Plan]:
    """The K boots spread over the hosts: each the whole plan (every filesystem and disk, its
    rounds interleaved) with its own run id b<k> and repetition offset, as `--boots` makes them."""
    whole = plan.with_repeat(boots=k)
    return [boots_mod.boot_plan(whole, i) for i in range(1, k + 1)]


@dataclass
class _VM:
    """One boot of the run, and where it has been tried."""

    plan: Plan
    attempts: list[dict[str, Any]] = field(default_factory=list)
    outcome: runner.Outcome | None = None


@dataclass
class _HostState:
    host: hosts.Host
    status: str = "ok"  # ok | failed
    error: str | None = None
    choice: Any = None
    vms: int = 0  # boots it ran
    facts: dict[str, Any] = field(default_factory=dict)  # host_facts: what makes its numbers comparable


# What must be alike for filesystems measured on different hosts to be compared (issue 30).
FACTS = ("accel", "cpu_model", "cpus", "memory_bytes", "kernel", "qemu", "libvirt")


def host_facts(host: hosts.Host, choice: Any) -> dict[str, Any]:
    """The accelerator fslab will use on `host` and the machine facts that change a measurement;
    a fact that cannot be read is None (and not compared)."""
    out: dict[str, Any] = {"accel": choice.used}
    try:
        d = hosts.describe(host)
        out.update({k: d.get(k) for k in ("cpu_model", "cpus", "memory_bytes", "kernel")})
    except (FslabError, OSError, ValueError):
        pass
    try:
        out["qemu"] = hosts.qemu_version(host)
    except (FslabError, OSError):
        out["qemu"] = None
    try:
        out["libvirt"] = libvirt.version(host.uri).get("daemon")
    except (FslabError, OSError):
        out["libvirt"] = None
    return out


def unlike(facts: dict[str, dict[str, Any]]) -> list[str]:
    """One line per fact that differs between hosts (label -> host_facts), unknown facts left out.

    >>> unlike({"a": {"accel": "kvm", "cpus": 4}, "b": {"accel": "tcg", "cpus": 4}})
    ['accel: a kvm, b tcg']
    """
    out = []
    for k in FACTS:
        known = {label: f.get(k) for label, f in facts.items() if f.get(k) is not None}
        if len(set(map(str, known.values()))) > 1:
            out.append(f"{k}: " + ", ".join(f"{label} {v}" for label, v in known.items()))
    return out


class _Spread:
    def __init__(self, plan: Plan, image: images.Image, host_list: list[hosts.Host], top: Path,
                 retry: bool, log: Log, states: list[_HostState] | None = None, boots: int = 0,
                 board: live.Board | None = None):
        boots = boots or len(host_list)
        self.plan, self.image, self.top, self.retry, self.log = plan.with_repeat(boots=boots), image, top, retry, log
        self.vms = [_VM(p) for p in boot_plans(plan, boots)]
        self.queue: deque[_VM] = deque(self.vms)
        self.hosts = states if states is not None else [_HostState(h) for h in host_list]
        self.cond = threading.Condition()
        self.in_flight = 0
        self.stop = threading.Event()
        self.mixed: list[str] = []  # the differences between hosts the user allowed (--mix-hosts)
        self.board = board  # the live view: one row per VM running now
        self.lost: list[tuple[hosts.Host, str]] = []  # (host, domain) of boots whose host failed under them

    def _next(self, hs: _HostState) -> _VM | None:
        with self.cond:
            while True:
                if hs.status != "ok" or self.stop.is_set():
                    return None
                if self.queue:
                    self.in_flight += 1
                    return self.queue.popleft()
                if not self.in_flight:
                    return None
                self.cond.wait(timeout=5)  # a VM in flight elsewhere may come back to the queue

    def _done(self, vm: _VM | None = None, requeue: bool = False) -> None:
        with self.cond:
            self.in_flight -= 1
            if vm is not None and requeue:
                self.queue.append(vm)
            self.cond.notify_all()

    def _fail_host(self, hs: _HostState, error: str) -> None:
        with self.cond:
            if hs.status == "ok":
                hs.status, hs.error = "failed", error
                self.log(f"fslab: [{hs.host.label}] host failed: {error}; it takes no more boots")

    def _alive_elsewhere(self, hs: _HostState) -> bool:
        return any(h.status == "ok" for h in self.hosts if h is not hs)

    def worker(self, hs: _HostState) -> None:
        label = hs.host.label
        while (vm := self._next(hs)) is not None:
            name = vm.plan.run_id
            try:
                if hs.choice is None:
                    hs.choice = hosts.choose_accel(hs.host, vm.plan.vm.accelerator, self.image)
                    if hs.choice.warning:
                        self.log(f"fslab: [{label}] WARNING: {hs.choice.warning}")
            except FslabError as e:  # the host could not even be prepared: the boot never started there
                self._fail_host(hs, str(e))
                self._done(vm, requeue=True)
                return
            self._retire(vm)
            self.log(f"fslab: [{label}] {name}: starting (attempt {len(vm.attempts) + 1})")
            prefix = f"fslab: [{label}] {name}: "

            def vm_log(m: str, prefix: str = prefix) -> None:
                self.log(m.replace("fslab: ", prefix, 1))

            try:
                out = runner.run(vm.plan, self.image, hs.choice, self.top / "boots", host=hs.host,
                                 name=f"fslab-{self.plan.run_id}-{name}", stop=self.stop, log=vm_log,
                                 history_dir=self.top.parent, board=self.board)
            except KeyboardInterrupt:
                out = self._outcome(vm, "interrupted", "interrupted by the user; VM killed", False)
            except FslabError as e:
                out = self._outcome(vm, "failed", str(e), True)
            hs.vms += 1
            vm.outcome = out
            vm.attempts.append({"host": label, "status": out.status, "reason": out.reason,
                                "host_failed": out.host_failed})
            self.log(f"fslab: [{label}] {name}: {out.status} ({out.reason})")
            if not out.host_failed:
                self._done()
                continue
            self._fail_host(hs, out.reason)
            with self.cond:
                self.lost.append((hs.host, f"fslab-{self.plan.run_id}-{name}"))
            again = self.retry and self._alive_elsewhere(hs) and not self.stop.is_set()
            if again:
                self.log(f"fslab: [{label}] {name}: will run again on another host (--retry)")
            else:
                n, k = len(vm.plan.cases), len(vm.plan.filesystems)
                self.log(f"fslab: [{label}] {name}: its {n} case(s) on {k} filesystem(s) are marked failed")
            self._done(vm, requeue=again)
            return

    def _retire(self, vm: _VM) -> None:
        """An earlier attempt's run directory moves aside (boots/b<k>.attempt<j>)."""
        d = self.top / "boots" / vm.plan.run_id
        if d.exists():
            d.rename(d.with_name(f"{d.name}.attempt{len(vm.attempts)}"))

    def _outcome(self, vm: _VM, status: str, reason: str, host_failed: bool) -> runner.Outcome:
        """A boot that ended before the runner could say so: its run directory says it now."""
        d = self.top / "boots" / vm.plan.run_id
        d.mkdir(parents=True, exist_ok=True)
        m = json.loads((d / "manifest.json").read_text()) if (d / "manifest.json").is_file() else \
            {"fslab_run": runner.RUN_FORMAT, "run_id": vm.plan.run_id, "plan": vm.plan.to_json()}
        m.update(status=status, reason=reason)
        (d / "manifest.json").write_text(json.dumps(m, indent=2) + "\n")
        if not (d / "results.jsonl").is_file():
            write_jsonl(d / "results.jsonl", records_for_run(d, vm.plan, str(m.get("accel", "unknown"))))
        return runner.Outcome(d, status, reason, read_jsonl(d / "results.jsonl"), host_failed)

    def leftovers(self) -> None:
        """A host that failed under a running boot may have come back (its daemon restarted, its
        network back): the daemon then runs that guest on, unwatched and without its autodestroy.
        At the end of the run each such domain is destroyed if the host answers (one try each,
        libvirt.DESTROY_TIMEOUT_S at most); a host still gone needs nothing (its keepalive ends it)."""
        for host, dom in self.lost:
            try:
                if not libvirt.destroy(host.uri, dom):
                    continue  # it ended by itself meanwhile
            except FslabError:
                continue
            self.log(f"fslab: [{host.label}] the host answers again; its left-over domain {dom} was destroyed")

    def unrun(self) -> None:
        """Boots no host could take (every host failed) are failed boots, with failed records."""
        for vm in self.vms:
            if vm.outcome is None:
                reason = "no host left to run it: " + "; ".join(f"{h.host.label}: {h.error}" for h in self.hosts)
                vm.outcome = self._outcome(vm, "failed", reason, True)
                vm.attempts.append({"host": None, "status": "failed", "reason": reason, "host_failed": True})


def check_hosts(plan: Plan, image: images.Image, host_list: list[hosts.Host], mix_hosts: bool,
                log: Log) -> tuple[list[_HostState], list[str]]:
    """Each host's accelerator (probed there) and facts before any VM; hosts that differ are
    refused in one line unless `mix_hosts` (issue 30: a KVM host beside a TCG one compares the
    machines, not the filesystems). A host that cannot even be probed is failed here, as before.
    (host states, the differences allowed)."""
    states = [_HostState(h) for h in host_list]
    for hs in states:
        try:
            hs.choice = hosts.choose_accel(hs.host, plan.vm.accelerator, image)
            hs.facts = host_facts(hs.host, hs.choice)
        except FslabError as e:
            hs.status, hs.error = "failed", str(e)
            log(f"fslab: [{hs.host.label}] host failed: {e}; it takes no more boots")
            continue
        if hs.choice.warning:
            log(f"fslab: [{hs.host.label}] WARNING: {hs.choice.warning}")
    diffs = unlike({hs.host.label: hs.facts for hs in states if hs.status == "ok"})
    if diffs and not mix_hosts:
        raise FslabError("the hosts differ, so this run would compare machines, not filesystems: " + "; ".join(diffs),
                         hint="--mix-hosts runs anyway and ranks each host's filesystems on their own")
    return states, diffs


def run(plan: Plan, image: images.Image, host_list: list[hosts.Host], results_root: Path,
        retry: bool = False, log: Log = runner._stderr, mix_hosts: bool = False, boots: int = 0,
        board: live.Board | None = None) -> runner.Outcome:
    """Spread `boots` boots of `plan` (0: one per host) over `host_list`; the outcome of the whole
    (ok only if every boot was). The VMs that run at once share one live view (`board`; by
    default one on stderr, which then also carries `log`'s lines, above its rows)."""
    if board is None and log is runner._stderr:
        board = live.Board()
        log = board.say
    if not host_list:
        raise FslabError("no libvirt hosts given", hint="--host qemu:///system")
    if boots < 0:
        raise FslabError(f"--boots: {boots} is not allowed; allowed: 1 or more")
    states, mixed = check_hosts(plan, image, host_list, mix_hosts, log)
    top = results_root / plan.run_id
    runner.make_dirs(top, top / "boots")
    s = _Spread(plan, image, host_list, top, retry, log, states, boots, board)
    s.mixed = mixed
    # Until _merge: a run in progress, whose owner a later fslab checks (run/salvage.py).
    runner.write_manifest(top, {"fslab_run": runner.RUN_FORMAT, "run_id": plan.run_id, "status": "running",
                                "started": runner.now(), "pid": os.getpid(), "owner": owner.owner(),
                                "backend": "libvirt", "plan": s.plan.to_json(),
                                "spread": {"hosts": [h.label for h in host_list]}})
    slots = sum(h.slots for h in host_list)
    log(f"fslab: {len(s.vms)} boot(s) of every filesystem ({', '.join(f.name for f in plan.filesystems)}) over "
        f"{len(host_list)} hosts ({', '.join(h.label for h in host_list)}), "
        f"{'one boot' if slots == len(host_list) else 'slots'} per host at a time"
        f"{', retrying on another host' if retry else ''}")
    threads = [threading.Thread(target=s.worker, args=(hs,), name=f"fslab-{hs.host.label}", daemon=True)
               for hs in s.hosts for _ in range(hs.host.slots)]
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(timeout=0.5)
    except KeyboardInterrupt:
        s.stop.set()  # every VM ends as with Ctrl-C; what came back is kept and merged below
        for t in threads:
            t.join()
        _merge(s)
        raise
    s.unrun()
    s.leftovers()
    return _merge(s)


def _merge(s: _Spread) -> runner.Outcome:
    """The top run directory of every boot's (boots.merge): records with their boot and host,
    raw/ linked, one manifest with the boots' hosts and attempts and the hosts' states."""
    where = {i + 1: (vm.attempts[-1].get("host") if vm.attempts else None) for i, vm in enumerate(s.vms)}
    host_errors = {i + 1: vm.outcome.reason for i, vm in enumerate(s.vms) if vm.outcome and vm.outcome.host_failed}
    accel = next((h.choice.used for h in s.hosts if h.choice), "unknown")
    records = boots_mod.merge(s.top, s.plan, len(s.vms), accel=accel, hosts=where, host_errors=host_errors)
    out = json.loads((s.top / "manifest.json").read_text())
    for b in out["boots"]:
        b["attempts"] = s.vms[int(b["boot"]) - 1].attempts
    ok = [b for b in out["boots"] if b["status"] == "ok"]
    status = "ok" if len(ok) == len(s.vms) else "failed"
    failed_hosts = [h for h in s.hosts if h.status != "ok"]
    reason = f"{len(ok)} of {len(s.vms)} boots ok"
    if failed_hosts:
        reason += "; host " + "; host ".join(f"{h.host.label} failed: {h.error}" for h in failed_hosts)
    out.update(status=status, reason=reason, backend="libvirt", spread={"hosts": [h.host.label for h in s.hosts]},
               hosts=[{"uri": h.host.label, "status": h.status, "error": h.error, "boots": h.vms,
                       "accel": h.choice.used if h.choice else None, "facts": h.facts} for h in s.hosts])
    if s.mixed:  # allowed with --mix-hosts: the analysis ranks each host on its own
        out["mixed_hosts"] = s.mixed
    (s.top / "manifest.json").write_text(json.dumps(out, indent=2) + "\n")
    return runner.Outcome(s.top, status, reason, records)
