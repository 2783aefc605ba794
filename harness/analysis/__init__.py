"""From records to answers: statistics, comparisons, the studies' claims judged, the report (HTML,
Markdown, CSV), its figures and the terminal tables."""
