"""Numbers only: a run's measurements, verdicts and frames, the live A/B rows, the counts, the
greedy check's comparison, the noise prior and the K-sweep pipeline (decision → positions →
schedule → deploy → verification). Below both engine/ and report/; never imports report/ and
writes no sentence of a report. Import each module from its home (this package re-exports
nothing)."""
