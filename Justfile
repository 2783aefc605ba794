# fslab entry points. `just --list` shows them all.
set positional-arguments := false

fslab := justfile_directory() / ".venv/bin/fslab"
pytest := justfile_directory() / ".venv/bin/pytest"

# list the recipes
default:
    @just --list

# build (or reuse) the guest image, then run the suite of CONFIG and print the table
bench-all config="vmconfigs/default.yaml" *args="":
    {{fslab}} image build debian-12
    {{fslab}} run {{config}} {{args}}

# the smallest end-to-end check: one VM, ext4 and xfs, one 5 s fio case each; last line = run dir
smoke *args="":
    {{fslab}} image build debian-12
    {{fslab}} run vmconfigs/smoke.yaml {{args}}

# build (or reuse) every buildable image
images *args="":
    {{fslab}} image build debian-12 {{args}}

# summarise a run directory
report run:
    {{fslab}} report {{run}}

# every test, including those that boot real VMs (TCG where KVM does not work)
test *args="":
    {{pytest}} {{args}}

# fast unit tests only (no VM boots)
unit *args="":
    {{pytest}} -m "not vm" {{args}}

# ruff on the Python, shellcheck on the shell, packer fmt on the templates
lint:
    .venv/bin/ruff check harness tests
    shellcheck bootstrap.sh .ci/run images/*/*.sh packer/scripts/*.sh
    packer fmt -check packer/
