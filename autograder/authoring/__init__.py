"""Authoring an assignment: the lint that catches mistakes before students see them, and the notebook generated from the template."""
