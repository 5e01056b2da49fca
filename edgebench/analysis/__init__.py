"""Analysis of stored records: the metrics registry, statistics, compare, recommend, history,
energy and sustained-run summaries. Imports: results and the base modules only.
"""
