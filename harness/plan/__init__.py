"""The typed plan and its vocabulary, the lowest fslab layer: the plan document the guest reads
and the host keeps (document.py), disk settings (disk.py), the filesystem catalog, layouts, variants,
fio job files and their cost. Imports only core (harness/*.py)."""
