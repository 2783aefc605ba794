"""From the guest's results stream to results.jsonl: the tar stream, parsing fio JSON and timed
steps into records, IO amplification, fidelity results, why a case has no result."""
