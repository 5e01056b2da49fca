"""Results: the one record type and the append-only store. Imports: the base modules only."""
