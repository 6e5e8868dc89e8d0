# mistake: a hybrid block: pre-norm around the attention (x + mha(layer_norm(x))), post-norm around the feed-forward layer
# loses: block
# keeps: softmax, attention, mask, split_heads, multi_head
# hint: values
# diagnosis: mixed_norm
import math

import torch


def softmax(x, dim=-1):
    z = x - torch.amax(x, dim=dim, keepdim=True)
    return torch.exp(z - torch.log(torch.exp(z).sum(dim=dim, keepdim=True)))


def causal_mask(T):
    return torch.ones(T, T).triu(1) == 1


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = (q / math.sqrt(q.shape[-1])) @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores + torch.zeros_like(scores).masked_fill(mask, float("-inf"))
    w = softmax(scores, dim=-1)
    return w @ v, w


def split_heads(x, n_heads):
    *lead, T, d_model = x.shape
    return x.reshape(*lead, T, n_heads, d_model // n_heads).transpose(-3, -2)


def merge_heads(x):
    *lead, n_heads, T, d_head = x.shape
    return x.transpose(-3, -2).reshape(*lead, T, n_heads * d_head)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    if context is None:
        context = x
    q = split_heads(x @ params["w_q"], n_heads)
    k = split_heads(context @ params["w_k"], n_heads)
    v = split_heads(context @ params["w_v"], n_heads)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    var, mean = torch.var_mean(x, dim=-1, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = x + multi_head_attention(layer_norm(x, params["ln1_gamma"], params["ln1_beta"]),
                                 params, n_heads, mask)
    ff = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + ff, params["ln2_gamma"], params["ln2_beta"])
