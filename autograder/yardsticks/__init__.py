"""The developers' yardsticks, measuring the product rather than being part of it: the naming
corpus evaluation (`evaluate`, `realworld`, `bundle_check`: `autograder diagnose-eval`), the
class benchmark (`benchmark`), the similarity benchmark and Gradescope's memory measurement.
No product package imports this one; only the command line does."""
