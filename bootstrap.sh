#!/usr/bin/env bash
# Install what fslab needs on a Debian 12 machine, idempotently, then make .venv with fslab and just.
# Run as root (or with sudo available). Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")"

APT_PACKAGES=(
  qemu-system-x86 qemu-utils      # the VMs and their disks
  mmdebstrap packer               # the image: offline base from Debian's archive, then Packer
  genisoimage xorriso             # NoCloud seed ISOs (ours and Packer's cd_files)
  openssh-client                  # ssh-keygen for the Packer build's throwaway key; ssh/scp to libvirt hosts
  libvirt-daemon-system libvirt-clients  # the libvirt backend (driven through its API; virsh for a person)
  libvirt-dev pkg-config python3-dev gcc  # build the `libvirt` extra (libvirt-python) into .venv
  libvirt-l10n locales            # tests run the libvirt paths under de_DE and ja_JP with its translations
  openssh-server                  # the two-host test reaches this machine as qemu+ssh://root@127.0.0.1
  e2fsprogs                       # mkfs.ext4 -d makes the root filesystem image
  xfsprogs                        # tests find xfs's log with xfs_db, as the power-loss guest program does
  reiserfsprogs jfsutils btrfs-progs  # ... reiserfs's journal, jfs's inline log, btrfs's FS tree and mirrors
  zstd                            # image bundles (fslab image export/import); the image initramfs a `kernel:` reuses
  kmod gpgv debian-archive-keyring dpkg  # `kernel:`: depmod indexes its modules, the archive index is checked, .deb unpacked
  docker-registry                 # tests start a real OCI registry on 127.0.0.1 (fslab image/results push|pull)
  fio                             # host-side tests turn real fio JSON into records
  python3-venv python3-pip
  shellcheck                      # lint of the shell scripts
  chromium                        # tests render the report in headless Chromium and look at its first screen
  git
)

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The locales tests/test_virsh_locale.py runs the libvirt paths and the real virsh under (skipped if missing).
gen=""
for loc in de_DE ja_JP; do
  if ! locale -a 2>/dev/null | grep -qix "$loc.utf8"; then
    $SUDO sed -i "s/^# *\($loc.UTF-8 UTF-8\)/\1/" /etc/locale.gen
    gen=1
  fi
done
if [ -n "$gen" ]; then
  echo "bootstrap: generating the de_DE.UTF-8 and ja_JP.UTF-8 locales" >&2
  $SUDO locale-gen >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.fslab-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[test,libvirt]' rust-just
  touch "$stamp"
fi

# actionlint checks .github/workflows in `just lint`. A Go module: built at a pinned version (Go
# verifies it against its checksum database) into .venv/bin. Without Go, `just lint` says so.
ACTIONLINT_VERSION=v1.7.12
GO=$(command -v go || echo /usr/local/go/bin/go)
if [ "$(.venv/bin/actionlint -version 2>/dev/null | head -n 1)" != "$ACTIONLINT_VERSION" ]; then
  if [ -x "$GO" ]; then
    echo "bootstrap: installing actionlint $ACTIONLINT_VERSION (go install)" >&2
    GOBIN="$PWD/.venv/bin" "$GO" install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
  else
    echo "bootstrap: no Go found: actionlint is not installed and \`just lint\` will stop at it" >&2
  fi
fi
echo "bootstrap: ready (.venv/bin/fslab, .venv/bin/just, .venv/bin/actionlint)" >&2
