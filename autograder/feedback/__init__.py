"""Feedback on one submission: the one walk of a question's cases that every output renders
(`render`), and the terminal's text (`terminal`)."""
