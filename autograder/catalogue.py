"""The public face of catalogues of known mistakes: everything an assignment's `mistakes.py`
imports. A catalogue is a module defining `catalogue = Catalogue()` and registering mistakes:
variants of the reference (`@catalogue.variant(...)`) and rules on what a student's outcome
shows (`when=`, built from the symptom predicates below with `all_of`/`any_of`/`not_`).
docs/naming-mistakes.md documents every name here. `__all__` is pinned by
tests/test_public_faces.py: a name leaves it only on purpose.
"""
from __future__ import annotations

from .diagnose.catalogue import Catalogue, Family, Mistake
from .diagnose.patterns import (axis_detail, factor_detail, fixed_rank, fixed_rank_detail,
                                none_unhandled, normalised_along_other_axis,
                                off_by_constant_factor)
from .diagnose.symptoms import (Evidence, Predicate, all_of, any_of, changed_input,
                                computed_in_float32, equals_expected_transposed, expected_dtype,
                                float32_rounding, forbidden_call, gradient_cut,
                                lowered_precision, mixed_precision_error,
                                nan_only_on_large_inputs, non_finite_where_expected_finite, not_,
                                output_matches_reference, raised, raised_precision,
                                sums_to_one_along, values_right_dtype_wrong)

__all__ = [
    # the catalogue and its entries
    "Catalogue", "Family", "Mistake",
    # rules: what a rule receives, and how rules combine
    "Evidence", "Predicate", "all_of", "any_of", "not_",
    # symptoms of one outcome
    "changed_input", "computed_in_float32", "equals_expected_transposed", "expected_dtype",
    "float32_rounding", "forbidden_call", "gradient_cut", "lowered_precision",
    "mixed_precision_error", "nan_only_on_large_inputs", "non_finite_where_expected_finite",
    "output_matches_reference", "raised", "raised_precision", "sums_to_one_along",
    "values_right_dtype_wrong",
    # symptoms across a function's cases and at the student's failing line (fallback rules)
    "axis_detail", "factor_detail", "fixed_rank", "fixed_rank_detail", "none_unhandled",
    "normalised_along_other_axis", "off_by_constant_factor",
]
