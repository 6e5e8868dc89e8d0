"""Naming the mistake behind a failing case, from an assignment's catalogue of known mistakes.

An assignment may point to a catalogue (`mistakes = "mistakes.py"` in `assignment.toml`): a
module defining `catalogue = Catalogue()` and registering known mistakes, each with an id, a short
name and a hint in plain words. A mistake is recognised by

* variants: the hidden reference with one or more functions replaced by a mistaken version. A
  variant of one function also explains the functions whose reference calls it (the copy of the
  reference it lives in calls the variant), so a mistake in a helper explains its callers too;
* rules (`when=`): predicates on what the student's outcome shows, built from the symptoms
  (NaN only on large inputs, rows summing to 1 along another axis, the expected output
  transposed, no gradient, an input changed in place...). On a variant, a rule narrows it.

Everything here runs in the trusted process on plain data: the inputs the grader made, the
reference's outcome and the student's decoded outcome. It runs only for failing cases, once the
submission has made its last call to its worker (so it never uses the student's time limits), and
it names a mistake only when the evidence is unambiguous: the reference does not reproduce the
student's outcome, exactly one mistake does, and that mistake's variant agrees with every check
the student passed on the functions it replaces. Otherwise the plain mismatch message stands alone.

The modules, by audience (everything public is importable from this package too):

* `catalogue`: for assignment authors: `Catalogue`, `Mistake`; finding and loading an
  assignment's catalogue; `describe_mistakes` for reports.
* `symptoms`: for authors writing rules: `Evidence`, the symptom predicates and `all_of` /
  `any_of` / `not_`; and the distances between outcomes that the variant engine uses.
* `variants`: the engine: `CheckRecord` (one check), running variants with their caches,
  `find_matches`.
* `session`: for the grader: the per-submission `Session`, which a check context carries.
* `patterns`: for authors writing fallback rules: symptoms across a function's cases and at
  the student's failing line (fixed-rank code, an unhandled None, a constant factor, another
  axis).
* `causes`: the bounded search for several mistakes that together explain a case.
* `fallback`: combinations of two mistakes, and fallback rules when nothing else matches.
* `stand_ins`: a case that fails inside a failing helper of another question, graded again
  with correct helpers standing in, so that its own mistakes are named too.
* `constructs`: whether the code a case runs holds the construct a mistake is made with.

This package imports torch; the class-level figures (`diagnoses`, `mistake_counts`) live in
`autograder.model.results`, which stays torch-free for a class run's main process.
"""
from __future__ import annotations

from ..model.results import diagnoses, mistake_counts
from .catalogue import (Catalogue, Family, Mistake, catalogue_for, catalogue_path, describe_mistakes,
                        load_catalogue)
from .session import KEPT_BYTES, RECORD_FACTOR, RECORD_FLOOR, Session, outcome_bytes
from .symptoms import (CLOSER, INF, Evidence, Predicate, all_of, any_of, as_tensor,
                       changed_input, computed_in_float32, distance, raised_precision,
                       equals_expected_transposed, expected_dtype, explains, float32_rounding,
                       forbidden_call, gradient_cut, lowered_precision, mixed_precision_error,
                       nan_only_on_large_inputs, non_finite_where_expected_finite, not_,
                       output_matches_reference, raised, sums_to_one_along,
                       values_right_dtype_wrong)
from .variants import CheckRecord, find_matches
from .patterns import (axis_detail, factor_detail, fixed_rank, fixed_rank_detail,
                       none_unhandled, normalised_along_other_axis, off_by_constant_factor)

__all__ = [
    # class-level figures (autograder.model.results)
    "diagnoses", "mistake_counts",
    # catalogue
    "Catalogue", "Family", "Mistake", "catalogue_for", "catalogue_path", "describe_mistakes",
    "load_catalogue",
    # symptoms and distances
    "CLOSER", "INF", "Evidence", "Predicate", "all_of", "any_of", "as_tensor", "changed_input",
    "computed_in_float32", "distance", "raised_precision",
    "equals_expected_transposed", "expected_dtype", "explains", "float32_rounding",
    "forbidden_call", "gradient_cut",
    "lowered_precision", "mixed_precision_error", "nan_only_on_large_inputs",
    "non_finite_where_expected_finite", "not_", "output_matches_reference",
    "raised", "sums_to_one_along", "values_right_dtype_wrong",
    # variants
    "CheckRecord", "find_matches",
    # fallback rules' symptoms
    "axis_detail", "factor_detail", "fixed_rank", "fixed_rank_detail", "none_unhandled",
    "normalised_along_other_axis", "off_by_constant_factor",
    # one submission
    "KEPT_BYTES", "RECORD_FACTOR", "RECORD_FLOOR", "Session",
    "outcome_bytes",
]
