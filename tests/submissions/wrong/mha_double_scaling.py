# mistake: multi_head_attention scales the queries by 1/sqrt(d_head) and then calls an attention that scales again, so scores are divided by d_head (not in the catalogue: no mistake should be named)
# loses: multi_head, block
# keeps: softmax, attention, mask, split_heads
# hint: scale
# diagnosis: none
# I compute each head separately in multi_head_attention, it was easier
# for me to think about.
import math
import torch


def softmax(x, dim=-1):
    x_max = x.max(dim, keepdim=True)[0]
    y = torch.exp(x - x_max)
    total = y.sum(dim, keepdim=True)
    return y / total


def causal_mask(T):
    mask = torch.zeros(T, T, dtype=torch.bool)
    for i in range(T):
        mask[i, i + 1:] = True
    return mask


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, torch.transpose(k, -2, -1))
    scores = scores / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, -float("inf"))
    weights = softmax(scores, -1)
    output = torch.matmul(weights, v)
    return (output, weights)


def split_heads(x, n_heads):
    chunks = torch.chunk(x, n_heads, dim=-1)
    return torch.stack(chunks, dim=-3)


def merge_heads(x):
    heads = torch.unbind(x, dim=-3)
    return torch.cat(heads, dim=-1)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    if context is None:
        context = x
    d_model = x.shape[-1]
    d_head = d_model // n_heads
    Q = x @ params["w_q"] / math.sqrt(d_head)
    K = context @ params["w_k"]
    V = context @ params["w_v"]
    if mask is not None:
        # the mask may carry a head axis, so line it up with (..., heads, Tq, Tk)
        full = torch.broadcast_shapes(
            mask.shape, Q.shape[:-2] + (n_heads, Q.shape[-2], K.shape[-2])
        )
        mask = mask.expand(full)
    head_outputs = []
    for i in range(n_heads):
        sl = slice(i * d_head, (i + 1) * d_head)
        mask_i = None if mask is None else mask[..., i, :, :]
        out_i, _ = scaled_dot_product_attention(Q[..., sl], K[..., sl], V[..., sl], mask_i)
        head_outputs.append(out_i)
    concat = torch.cat(head_outputs, dim=-1)
    return concat @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    n = x.shape[-1]
    mean = x.sum(-1, keepdim=True) / n
    diff = x - mean
    var = (diff ** 2).sum(-1, keepdim=True) / n
    std = torch.sqrt(var + eps)
    return gamma * (diff / std) + beta


def transformer_block(x, params, n_heads, mask=None):
    attn_out = multi_head_attention(x, params, n_heads, mask)
    x1 = x + attn_out
    h = layer_norm(x1, params["ln1_gamma"], params["ln1_beta"])
    hidden = h @ params["w1"] + params["b1"]
    hidden = torch.where(hidden > 0, hidden, torch.zeros_like(hidden))
    ffn_out = hidden @ params["w2"] + params["b2"]
    return layer_norm(h + ffn_out, params["ln2_gamma"], params["ln2_beta"])
