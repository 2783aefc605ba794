"""What is measured: vmconfig loading, the filesystem catalog, variants, layouts, fio job files and the
resolved plan (the one document the guest agent reads)."""
