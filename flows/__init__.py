"""Flows: what the toolkit does with the models, the RTL and the tools, apart from the command line
(synthesis, proofs, mutants, exploration, benchmarks, results, plots)."""
