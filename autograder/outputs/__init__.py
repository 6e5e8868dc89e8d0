"""Outputs of any structure: naming a place in a function's output, tolerances per place
(`paths`), and comparing a student's output with the expected one (`compare`)."""
