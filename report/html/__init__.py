"""The HTML and Markdown rendering of the report (``report.html_report.build_report`` writes them)."""
