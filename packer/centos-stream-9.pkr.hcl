# fslab CentOS Stream 9 guest: the official GenericCloud image, booted once under QEMU with a
# NoCloud seed for SSH, given fio/xfsprogs/e2fsprogs/python3 and the fslab guest agent, and
# provisioned with the same packer/scripts/*.sh as debian-12. Needs internet (the base image
# and the packages come from CentOS mirrors); fslab only validates it offline.
# Written for Debian's packer 1.6.6: no required_plugins, cd_files (not cd_content).

variable "base_image_url" {
  type        = string
  default     = "https://cloud.centos.org/centos/9-stream/x86_64/images/CentOS-Stream-GenericCloud-x86_64-9-20250812.1.x86_64.qcow2"
  description = "Pinned GenericCloud qcow2 (a dated file name, never a 'latest' link)."
  validation {
    condition     = replace(var.base_image_url, "latest", "") == var.base_image_url
    error_message = "The base_image_url must name a dated image, not a floating 'latest' link."
  }
}

variable "base_image_sha256" {
  type        = string
  default     = "1358744bd5df473eaf38defc80b039add9cf9306f35c14a97e7b122cea925777"
  description = "sha256 (64 hex digits) of base_image_url, from the CHECKSUM file next to it."
  validation {
    # packer 1.6.6's regex() is unusable in validation; length + trim() check the same.
    condition     = length(var.base_image_sha256) == 64 && trim(var.base_image_sha256, "0123456789abcdef") == ""
    error_message = "The base_image_sha256 must be 64 lowercase hex digits."
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

source "qemu" "centos-stream-9" {
  accelerator      = var.accelerator
  disk_image       = true
  iso_url          = var.base_image_url
  iso_checksum     = "sha256:${var.base_image_sha256}"
  skip_resize_disk = true
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
  sources = ["source.qemu.centos-stream-9"]

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
      "${path.root}/scripts/05-rhel-packages.sh",
      "${path.root}/scripts/10-cloud-init.sh",
      "${path.root}/scripts/15-guest-agent.sh",
      "${path.root}/scripts/20-probe-filesystems.sh",
      "${path.root}/scripts/30-packages.sh",
      "${path.root}/scripts/40-background-jobs.sh",
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
}
