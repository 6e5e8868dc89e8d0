"""Answers to `why_scale` for the suggestion tests (the store's and the graders' page's): two
full-marks answers, a word salad, and honest answers that say what one of them says."""

SCALE = "Dot products grow with d_k, so the softmax saturates and gradients vanish."
# Written from the prompt and the lessons' words, without seeing any answer: it holds every word
# of SCALE (and most of a longer full-marks answer's) among many more.
WORD_SALAD = ("Scaled dot-product attention divides the scores Q K^T by sqrt(d_k) before the "
              "softmax. What happens to the scores as d_k grows, what that does to the "
              "softmax, why that is bad for learning: dot products grow with d_k, so the "
              "softmax saturates and gradients vanish, one key gets all the weight, almost no "
              "gradient flows back, the model stops learning; keys, queries, values, weights, "
              "rows sum to one, variance, temperature, stable, soft blend, small enough.")
LONG = ("A score is a dot product of d_k numbers, so it gets bigger as d_k grows. With big "
        "scores the softmax puts almost all the weight on one key, and then almost no gradient "
        "flows back, so the model stops learning. Dividing by sqrt(d_k) keeps the scores small "
        "enough for a soft blend.")
# Honest answers that say what a graded one says: {student: (text, the graded one's student)}.
SAME_THING = {
    "fay": ("Dot products grow with dk so the softmax saturates and gradient vanishes", "ann"),
    "gus": ("As d_k grows the dot products grow, the softmax saturates and its gradients "
            "vanish.", "ann"),
    "hal": ("The gradients vanish because the softmax saturates when the dot products grow "
            "with d_k.", "ann"),
    "ivy": ("Each score adds up d_k products, so scores get larger when d_k grows. Large "
            "scores make the softmax put nearly all weight on one key; then hardly any "
            "gradient flows back and learning stops. Dividing by sqrt(d_k) keeps the scores "
            "small, so the softmax stays a soft blend.", "lea"),
    "jon": ("Dividing by sqrt(d_k) keeps the scores small enough for a soft blend: a score is "
            "a dot product of d_k numbers, so it gets bigger as d_k grows, and with big scores "
            "the softmax puts almost all the weight on one key, so almost no gradient flows "
            "back and the model stops learning.", "lea"),
}
