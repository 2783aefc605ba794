# fslab Debian 12 guests (debian-12 and its variants, e.g. debian-12-zfs): boots the base made
# from images/<name>/ by bootstrap.sh once under QEMU (direct kernel boot, NoCloud seed for SSH)
# and provisions it with packer/scripts/*.sh. The disk this boot leaves is not the image: the last
# step exports what provisioning changed, and the harness makes the image from its own tree,
# deterministically (harness/image/tree.py), so the disk is never compacted.
# Written for Debian's packer 1.6.6: the qemu builder is built in, so no required_plugins,
# and cd_files (not cd_content) carries the seed. The harness (harness/image/store.py) supplies
# every variable; none has a floating default.

variable "base_image" {
  type        = string
  description = "Path of the base qcow2 made by images/debian-12/bootstrap.sh."
}

variable "base_image_sha256" {
  type        = string
  description = "sha256 (64 hex digits) of base_image; Packer refuses a base that does not match."
  validation {
    # packer 1.6.6's regex() is unusable in validation; length + trim() check the same.
    condition     = length(var.base_image_sha256) == 64 && trim(var.base_image_sha256, "0123456789abcdef") == ""
    error_message = "The base_image_sha256 must be 64 lowercase hex digits."
  }
}

variable "source_date_epoch" {
  type        = string
  description = "SOURCE_DATE_EPOCH of the base image (from the package lock): every inode's ctime in it."
  validation {
    condition     = length(var.source_date_epoch) > 0 && trim(var.source_date_epoch, "0123456789") == ""
    error_message = "The source_date_epoch must be a decimal number of seconds."
  }
}

variable "kernel" {
  type        = string
  description = "Kernel (vmlinuz) of the base image, for direct kernel boot."
}

variable "initrd" {
  type        = string
  description = "Initramfs (initrd.img) of the base image."
}

variable "kernel_cmdline" {
  type        = string
  default     = "root=LABEL=fslab-root ro console=ttyS0"
  description = "Kernel command line of the build boot; the root filesystem is labelled fslab-root."
  validation {
    condition     = replace(var.kernel_cmdline, "root=LABEL=fslab-root", "") != var.kernel_cmdline
    error_message = "The kernel_cmdline must boot the root filesystem with root=LABEL=fslab-root."
  }
}

variable "accelerator" {
  type        = string
  default     = "tcg"
  description = "QEMU accelerator for the build boot: kvm, tcg or none."
  validation {
    condition     = contains(["kvm", "tcg", "none"], var.accelerator)
    error_message = "The accelerator must be one of: kvm, tcg, none."
  }
}

variable "ssh_private_key_file" {
  type        = string
  description = "Private key whose public half the seed's user-data authorizes for root."
}

variable "seed_dir" {
  type        = string
  description = "Directory holding the NoCloud seed files user-data and meta-data."
}

variable "output_dir" {
  type        = string
  description = "Directory Packer creates for the provisioned disk.qcow2; must not exist yet."
}

variable "facts_dir" {
  type        = string
  description = "Existing directory receiving filesystems.json, packages.tsv and probe.log from the guest."
}

variable "guest_agent" {
  type        = string
  description = "Path of harness/guest/fslab_guest.py, installed as /usr/local/bin/fslab-guest."
}

variable "guest_package" {
  type        = string
  description = "Directory harness/guest/fslabguest (the guest programs' package), installed beside python3's own."
}

variable "catalog" {
  type        = string
  description = "JSON list of the filesystems to probe (harness/image/fs_needs.py, from fslab's catalog)."
}

variable "serial_log" {
  type        = string
  description = "File receiving the guest's serial console during the build."
}

variable "memory_mib" {
  type        = number
  default     = 2048
  description = "Memory of the build VM in MiB."
  validation {
    condition     = var.memory_mib >= 1024
    error_message = "The memory_mib must be at least 1024."
  }
}

source "qemu" "debian-12" {
  accelerator      = var.accelerator
  disk_image       = true
  iso_url          = var.base_image
  iso_checksum     = "sha256:${var.base_image_sha256}"
  skip_resize_disk = true
  # Not use_backing_file: packer 1.6.6 runs `qemu-img create -b` without -F, which QEMU 7.2
  # refuses ("Backing file specified without backing format"); the copy costs seconds.
  skip_compaction  = true
  machine_type     = "q35"
  format           = "qcow2"
  disk_interface   = "virtio"
  net_device       = "virtio-net"
  output_directory = var.output_dir
  vm_name          = "disk.qcow2"
  headless         = true
  memory           = var.memory_mib
  cpus             = 2
  cd_files         = ["${var.seed_dir}/user-data", "${var.seed_dir}/meta-data"]
  cd_label         = "cidata"
  qemuargs = [
    ["-kernel", var.kernel],
    ["-initrd", var.initrd],
    ["-append", var.kernel_cmdline],
    ["-serial", "file:${var.serial_log}"],
  ]
  communicator         = "ssh"
  ssh_username         = "root"
  ssh_private_key_file = var.ssh_private_key_file
  ssh_timeout          = "30m"
  shutdown_command     = "shutdown -P now"
  shutdown_timeout     = "10m"
}

build {
  sources = ["source.qemu.debian-12"]

  provisioner "file" {
    source      = var.guest_agent
    destination = "/tmp/fslab-guest"
  }

  provisioner "file" {
    source      = var.guest_package
    destination = "/tmp"
  }

  provisioner "file" {
    source      = var.catalog
    destination = "/tmp/fslab-catalog.json"
  }

  provisioner "shell" {
    execute_command = "chmod +x {{ .Path }}; {{ .Vars }} sh -eux '{{ .Path }}'"
    scripts = [
      "${path.root}/scripts/10-cloud-init.sh",
      "${path.root}/scripts/15-guest-agent.sh",
      "${path.root}/scripts/20-probe-filesystems.sh",
      "${path.root}/scripts/30-packages.sh",
      "${path.root}/scripts/40-background-jobs.sh",
      "${path.root}/scripts/45-lean-boot.sh",
    ]
  }

  provisioner "file" {
    direction   = "download"
    source      = "/var/lib/fslab/filesystems.json"
    destination = "${var.facts_dir}/filesystems.json"
  }

  provisioner "file" {
    direction   = "download"
    source      = "/var/lib/fslab/packages.tsv"
    destination = "${var.facts_dir}/packages.tsv"
  }

  provisioner "file" {
    direction   = "download"
    source      = "/var/lib/fslab/probe.log"
    destination = "${var.facts_dir}/probe.log"
  }

  provisioner "shell" {
    execute_command = "chmod +x {{ .Path }}; {{ .Vars }} sh -eux '{{ .Path }}'"
    script          = "${path.root}/scripts/90-cleanup.sh"
  }

  provisioner "shell" {
    execute_command  = "chmod +x {{ .Path }}; {{ .Vars }} sh -eu '{{ .Path }}'"
    environment_vars = ["SOURCE_DATE_EPOCH=${var.source_date_epoch}"]
    script           = "${path.root}/scripts/95-export-tree.sh"
  }

  provisioner "file" {
    direction   = "download"
    source      = "/run/fslab-export/changed.tar"
    destination = "${var.facts_dir}/changed.tar"
  }

  provisioner "file" {
    direction   = "download"
    source      = "/run/fslab-export/paths.gz"
    destination = "${var.facts_dir}/paths.gz"
  }
}
