# assignment: attention
# mistake: a textbook-style masked attention that adds the boolean mask to the scores (True becomes +1) instead of filling the blocked scores
# loses: mask, multi_head, block
# keeps: softmax, attention, split_heads
# diagnosis: mask_added
"""Scaled dot-product attention in the style of an interactive deep-learning textbook."""
import math

import torch


def softmax(X, dim=-1):
    X_exp = torch.exp(X - X.max(dim=dim, keepdim=True).values)
    partition = X_exp.sum(dim=dim, keepdim=True)
    return X_exp / partition


def causal_mask(T):
    idx = torch.arange(T)
    return idx[None, :] > idx[:, None]


def scaled_dot_product_attention(queries, keys, values, mask=None):
    d = queries.shape[-1]
    scores = torch.matmul(queries, keys.transpose(-2, -1)) / math.sqrt(d)
    if mask is not None:
        scores = scores + mask      # meant to push the blocked positions away
    attention_weights = softmax(scores, dim=-1)
    return torch.matmul(attention_weights, values), attention_weights


def split_heads(X, num_heads):
    X = X.reshape(*X.shape[:-1], num_heads, -1)
    return X.transpose(-3, -2)


def merge_heads(X):
    X = X.transpose(-3, -2)
    return X.reshape(*X.shape[:-2], -1)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    kv = x if context is None else context
    queries = split_heads(torch.matmul(x, params["w_q"]), n_heads)
    keys = split_heads(torch.matmul(kv, params["w_k"]), n_heads)
    values = split_heads(torch.matmul(kv, params["w_v"]), n_heads)
    output, _ = scaled_dot_product_attention(queries, keys, values, mask)
    return torch.matmul(merge_heads(output), params["w_o"])


def layer_norm(X, gamma, beta, eps=1e-5):
    mean = X.mean(dim=-1, keepdim=True)
    var = ((X - mean) ** 2).mean(dim=-1, keepdim=True)
    return gamma * (X - mean) / torch.sqrt(var + eps) + beta


def transformer_block(X, params, n_heads, mask=None):
    Y = layer_norm(X + multi_head_attention(X, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    ffn = torch.relu(Y @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(Y + ffn, params["ln2_gamma"], params["ln2_beta"])
