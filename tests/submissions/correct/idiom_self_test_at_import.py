# mistake: none
# loses:
# keeps: softmax, attention, mask, split_heads, multi_head, block
# hint:
# idioms: a self-test at the top level of the file (no `if __name__ == "__main__":` guard) that
# compares the student's softmax and layer norm with torch.softmax and F.layer_norm: the
# library is only called while the file is imported, never by a graded function
import math

import torch
import torch.nn.functional as F


def softmax(x, dim=-1):
    shifted = x - x.amax(dim=dim, keepdim=True)
    e = torch.exp(shifted)
    return e / e.sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).triu(1)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = softmax(scores)
    return weights @ v, weights


def split_heads(x, n_heads):
    return x.unflatten(-1, (n_heads, x.shape[-1] // n_heads)).transpose(-3, -2)


def merge_heads(x):
    return x.transpose(-3, -2).flatten(-2)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    source = x if context is None else context
    q = split_heads(x @ params["w_q"], n_heads)
    k = split_heads(source @ params["w_k"], n_heads)
    v = split_heads(source @ params["w_v"], n_heads)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask), params["ln1_gamma"],
                   params["ln1_beta"])
    ff = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + ff, params["ln2_gamma"], params["ln2_beta"])


# Quick self-test against the library (runs whenever the file is imported).
_x = torch.randn(2, 5)
assert torch.allclose(softmax(_x), torch.softmax(_x, dim=-1))
assert torch.allclose(layer_norm(_x, torch.ones(5), torch.zeros(5)),
                      F.layer_norm(_x, (5,)), atol=1e-6)
print("self-test passed")
