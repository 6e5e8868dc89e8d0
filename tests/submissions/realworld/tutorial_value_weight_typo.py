# assignment: attention
# mistake: a blog-tutorial multi-head attention whose values are projected with the key weight (a copy-paste slip: v = kv @ w_k)
# loses: multi_head, block
# keeps: softmax, attention, mask, split_heads
# diagnosis: projection_wrong_weight
"""Self- and cross-attention from a step-by-step blog tutorial, adapted to the course's API."""
import torch


def softmax(x, dim=-1):
    m, _ = torch.max(x, dim=dim, keepdim=True)
    e = torch.exp(x - m)
    return e / torch.sum(e, dim=dim, keepdim=True)


def causal_mask(T):
    return ~torch.tril(torch.ones(T, T, dtype=torch.bool))


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
    if mask is not None:
        scores = torch.where(mask, torch.tensor(float("-inf"), dtype=scores.dtype), scores)
    w = softmax(scores, dim=-1)
    return w @ v, w


def split_heads(x, n_heads):
    *batch, T, d_model = x.shape
    return x.reshape(*batch, T, n_heads, d_model // n_heads).permute(
        *range(len(batch)), -2, -3, -1)


def merge_heads(x):
    *batch, H, T, d = x.shape
    return x.movedim(-3, -2).reshape(*batch, T, H * d)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    kv = context if context is not None else x
    q = split_heads(x @ params["w_q"], n_heads)
    k = split_heads(kv @ params["w_k"], n_heads)
    v = split_heads(kv @ params["w_k"], n_heads)
    out, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    centred = x - mean
    var = (centred * centred).mean(dim=-1, keepdim=True)
    return centred / (var + eps).sqrt() * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    a = multi_head_attention(x, params, n_heads, mask=mask)
    h = layer_norm(x + a, params["ln1_gamma"], params["ln1_beta"])
    f = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + f, params["ln2_gamma"], params["ln2_beta"])
