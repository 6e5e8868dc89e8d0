"""Pictures in feedback: for a failing public case whose expected result is a table of
probabilities (softmax's output, attention's weights), the student's values beside the expected
ones as heatmaps (`weights.picture_of` takes the data, `draw.heatmap` draws it as inline SVG). A
missing causal mask shows as weight above the diagonal, a softmax over the wrong axis as rows
that do not sum to 1. Public cases only: a hidden case's expected values are never drawn.
Shown in the HTML feedback page and under the notebook's `grader.check` cells."""
