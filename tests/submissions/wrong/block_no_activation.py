# mistake: the feed-forward layer has no activation between its two linear maps (relu forgotten), so it is a single linear map
# loses: block
# keeps: softmax, attention, mask, split_heads, multi_head
# hint: relu
# diagnosis: ffn_no_activation
import math

import torch


def softmax(x, dim=-1):
    x_max = x.max(dim, keepdim=True)[0]
    y = torch.exp(x - x_max)
    return y / y.sum(dim, keepdim=True)


def causal_mask(T):
    idx = torch.arange(T)
    return idx[None, :] > idx[:, None]


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, torch.transpose(k, -2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, -float("inf"))
    weights = softmax(scores, -1)
    return torch.matmul(weights, v), weights


def split_heads(x, n_heads):
    d_head = x.shape[-1] // n_heads
    heads = [x[..., i * d_head:(i + 1) * d_head] for i in range(n_heads)]
    return torch.stack(heads, dim=-3)


def merge_heads(x):
    return torch.cat(torch.unbind(x, dim=-3), dim=-1)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    src = x if context is None else context
    q = split_heads(torch.matmul(x, params["w_q"]), n_heads)
    k = split_heads(torch.matmul(src, params["w_k"]), n_heads)
    v = split_heads(torch.matmul(src, params["w_v"]), n_heads)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    return torch.matmul(merge_heads(out), params["w_o"])


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = torch.mean(x, dim=-1, keepdim=True)
    var = torch.mean((x - mean) ** 2, dim=-1, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    inner = torch.matmul(h, params["w1"]) + params["b1"]
    ffn = torch.matmul(inner, params["w2"]) + params["b2"]
    return layer_norm(h + ffn, params["ln2_gamma"], params["ln2_beta"])
