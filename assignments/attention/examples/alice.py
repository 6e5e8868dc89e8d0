# mistake: none
# loses:
# keeps: softmax, attention, mask, split_heads, multi_head, block
# hint:
import torch
import torch.nn.functional as F

NEG_BIG = -1e9


def softmax(x, dim=-1):
    m = torch.amax(x, dim=dim, keepdim=True)
    ex = (x - m).exp()
    return ex / ex.sum(dim, keepdim=True)


def causal_mask(T):
    i = torch.arange(T).unsqueeze(1)
    j = torch.arange(T).unsqueeze(0)
    return j > i


def scaled_dot_product_attention(q, k, v, mask=None):
    dk = q.shape[-1]
    scores = torch.einsum("...qd,...kd->...qk", q, k) / dk ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask, NEG_BIG)
    w = softmax(scores)
    out = torch.einsum("...qk,...kd->...qd", w, v)
    return out, w


def split_heads(x, n_heads):
    # (..., T, D) -> (..., T, H, D/H) -> (..., H, T, D/H)
    x = x.unflatten(-1, (n_heads, x.shape[-1] // n_heads))
    return x.movedim(-2, -3)


def merge_heads(x):
    return x.movedim(-3, -2).flatten(-2)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    src = context if context is not None else x
    q = torch.einsum("...td,de->...te", x, params["w_q"])
    k = torch.einsum("...td,de->...te", src, params["w_k"])
    v = torch.einsum("...td,de->...te", src, params["w_v"])
    o, _ = scaled_dot_product_attention(
        split_heads(q, n_heads), split_heads(k, n_heads), split_heads(v, n_heads), mask
    )
    return torch.einsum("...td,de->...te", merge_heads(o), params["w_o"])


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) * torch.rsqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    a = multi_head_attention(x, params, n_heads, mask=mask)
    h = layer_norm(x + a, params["ln1_gamma"], params["ln1_beta"])
    f = F.relu(h @ params["w1"] + params["b1"])
    f = f @ params["w2"] + params["b2"]
    return layer_norm(h + f, params["ln2_gamma"], params["ln2_beta"])


why_scale = """
A score is a dot product of d_k numbers, so it gets bigger as d_k grows. With big scores the
softmax puts almost all the weight on one key, and then almost no gradient flows back, so the
model stops learning. Dividing by sqrt(d_k) keeps the scores small enough for a soft blend.
"""

why_causal_mask = """
It sets the scores of later positions to -inf so their weights are 0. Otherwise a position
could look at the next token, which is the answer it has to predict, and just copy it.
"""

why_positions = """
Attention only compares contents, so it sees the tokens as a set: shuffle them and the outputs
are shuffled the same way. Word order has to be added to the inputs.
"""

why_quadratic = """
Every query is compared with every key, so there are T x T weights; twice the tokens means four
times the weights.
"""
