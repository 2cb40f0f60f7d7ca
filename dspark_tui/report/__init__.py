"""The report in words: the Markdown report (zh or en) and its sections, the comparison of two
runs, the charts and the files a finished run gets (report.md, report.en.md, the SVGs).

The numbers it tells come from dspark_tui/analysis/. This package re-exports nothing: import
each module from its home (`report.markdown.render_report`, `report.compare.render_comparison`,
`report.outputs.write_outputs` ...), so importing one module never loads the others.
"""
