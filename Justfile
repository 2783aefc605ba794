# fslab entry points. `just --list` shows them all.
set positional-arguments := false

fslab := justfile_directory() / ".venv/bin/fslab"
pytest := justfile_directory() / ".venv/bin/pytest"

# list the recipes
default:
    @just --list

# the main job: build/reuse images, run vmconfigs/default.yaml (study S1, fio-matrix quick);
# suites=all runs every study's suite on its own VM; suites=maildir,random-io a choice of them
bench-all suites="default" *args="":
    {{fslab}} bench --suites {{suites}} {{args}}

# the boot benchmark: n image boots (phases: firmware, kernel, initramfs, systemd, cloud-init, agent,
# first case) and n bare kernel+initramfs boots, interleaved; min, median and the ratio agent start / bare
bench-boot n="5" *args="":
    {{fslab}} bench boot --n {{n}} {{args}}

# how much of the device the VM shows: the same fio patterns on a host backing file and on the
# guest's raw device, their ratio (default vmconfigs/fidelity.yaml: raw, cache none, io_uring); e.g. --runtime 5
bench-fidelity config="vmconfigs/fidelity.yaml" *args="":
    {{fslab}} image build debian-12
    {{fslab}} bench fidelity {{config}} {{args}}

# run one vmconfig (its suite and profile, or --suite/--profile) and print the table
run config *args="":
    {{fslab}} image build debian-12
    {{fslab}} run {{config}} {{args}}

# the smallest end-to-end check: one VM, ext4 and xfs, one 5 s fio case each; last line = run dir
smoke *args="":
    {{fslab}} image build debian-12
    {{fslab}} run vmconfigs/smoke.yaml {{args}}

# build (or reuse) an image: debian-12 (the default), debian-12-zfs (ZFS, study S5) or debian-13 (trixie)
images name="debian-12" *args="":
    {{fslab}} image build {{name}} {{args}}

# write RUN/report/ (index.html, summary.md, records.csv, figures); several runs: `just report "r1 r2" --out DIR`
report runs *args="":
    {{fslab}} report {{runs}} {{args}}

# % change, 95% CI and verdict per case of run b against run a (refuses runs that measured different things)
compare a b *args="":
    {{fslab}} compare {{a}} {{b}} {{args}}

# every filesystem of one run against FS, e.g. `just compare-fs results/<run-id> ext4`
compare-fs run fs *args="":
    {{fslab}} compare {{run}} --baseline {{fs}} {{args}}

# every test, failing fast: lint and the unit tests first (in parallel), then the tests that boot
# real VMs (TCG where KVM does not work), only if the first ones passed: two VMs at a time (one
# test file per worker, in collection order: tests/conftest.py puts the longest first, by the
# seconds each took in CI, and gives a worker its next file only when it is on its current one's
# last test; a TCG guest keeps about one core busy), the slowest 25 listed at the end
test *args="": lint (unit args)
    {{pytest}} -m vm -n 2 --dist loadfile --no-loadscope-reorder --durations=25 {{args}}

# fast unit tests only (no VM boots), on every core
unit *args="":
    {{pytest}} -m "not vm" -n auto {{args}}

# the fuzz test with k times its 3,100 inputs: vmconfigs, fio jobs, fslab argument lists, run dirs
# (`just fuzz` = 12,400; `just fuzz 10` = 31,000); 0 tracebacks or it fails naming the seed
fuzz k="4" *args="":
    FSLAB_FUZZ={{k}} {{pytest}} tests/test_fuzz.py -n auto {{args}}

# inject each of tests/mutate.py's one-line bugs into a copy of the tree and run the unit tests that
# should catch it: caught/missed per bug and the count (a few minutes; not part of `just unit`)
mutate *args="":
    .venv/bin/python tests/mutate.py {{args}}

# ruff and mypy on the Python, shellcheck on the shell, packer fmt on the templates, actionlint
# (with shellcheck on every run: step) on .github/workflows
lint:
    .venv/bin/ruff check harness tests
    .venv/bin/mypy
    shellcheck bootstrap.sh .ci/run .ci/libvirt-up images/*/*.sh packer/scripts/*.sh
    packer fmt -check packer/
    @test -x .venv/bin/actionlint || { echo "lint: .venv/bin/actionlint is missing: ./bootstrap.sh installs it (it needs Go)" >&2; exit 1; }
    .venv/bin/actionlint

# not in `just test` (CI's budget; three TCG boots, two at once, about 10 minutes here): run them
# before changing how hosts fail
# the fault tests with real guests too (tests/test_vm_faults.py: a host's libvirtd killed mid-case)
test-faults *args="":
    FSLAB_FAULT_TESTS=1 {{pytest}} tests/test_vm_faults.py -s {{args}}

# VM tests left out of `just test` for CI's time budget: two kernels in four alternating boots; power-loss
# seq-2 on ext4 (about a thousand crash points); fslab stopped by SIGTERM and SIGKILL with real guests; a hung
# guest killed at its deadline
test-slow *args="":
    FSLAB_SLOW_TESTS=1 {{pytest}} tests/test_vm_kernel_boots.py tests/test_vm_seq2.py tests/test_vm_robust.py tests/test_vm_run.py::test_hung_guest_is_killed_at_its_deadline -s {{args}}
