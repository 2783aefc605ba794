"""Guest images, a separate path from runs: the store, the build (bootstrap, Packer, the final
reproducible image), package locks, reproducibility checks and bundles."""
