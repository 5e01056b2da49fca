"""Reporting: everything that turns records and analysis into text, tables, charts and files
(matrix, HTML, Markdown, CSV/Parquet, JUnit). Imports: analysis, results and the base modules.
"""
