"""From records to answers: statistics, comparisons, the report (HTML, Markdown, CSV) and its figures."""
