"""Authoring an assignment: the lint that catches mistakes before students see them, the snapshots of the public cases' expected values, and the notebook generated from the template."""
