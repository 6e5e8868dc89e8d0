"""softmax forgets `dim`; attention forgets `mask`; causal_mask is a constant, not a function."""
import math

import torch


def softmax(x):
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


causal_mask = torch.ones(3, 3, dtype=torch.bool).triu(1)


def scaled_dot_product_attention(q, k, v):
    w = softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]))
    return w @ v, w
