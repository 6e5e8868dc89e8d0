"""Where submissions are graded outside the class run: Gradescope, Classroom 50, GitHub Actions."""
