"""From the guest's results stream to results.jsonl: the tar stream, parsing fio JSON and timed
steps into records, the JSONL files and the terminal tables."""
