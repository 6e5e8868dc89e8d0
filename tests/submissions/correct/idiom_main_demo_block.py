# mistake: none
# loses:
# keeps: softmax, attention, mask, split_heads, multi_head, block
# hint:
# idioms: a `__main__` demo block (never run when graded) that takes its own module from
# sys.modules[__name__], compares with the library versions, prints and plots with matplotlib;
# gc.collect() between experiments; inspect.signature of its own function
import gc
import inspect
import math
import sys

import torch


def softmax(x, dim=-1):
    e = torch.exp(x - torch.max(x, dim=dim, keepdim=True).values)
    return e / torch.sum(e, dim=dim, keepdim=True)


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).triu(1)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(k.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, -math.inf)
    weights = softmax(scores, dim=-1) if _takes(softmax, "dim") else softmax(scores)
    return torch.matmul(weights, v), weights


def _takes(fn, name):
    # an earlier version of softmax had no `dim`; keep attention working with either
    return name in inspect.signature(fn).parameters


def split_heads(x, n_heads):
    *lead, T, d_model = x.shape
    return x.reshape(*lead, T, n_heads, d_model // n_heads).transpose(-3, -2)


def merge_heads(x):
    *lead, n_heads, T, d_head = x.shape
    return x.transpose(-3, -2).reshape(*lead, T, n_heads * d_head)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    kv = x if context is None else context
    q = split_heads(x @ params["w_q"], n_heads)
    k = split_heads(kv @ params["w_k"], n_heads)
    v = split_heads(kv @ params["w_v"], n_heads)
    out, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    ffn = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + ffn, params["ln2_gamma"], params["ln2_beta"])


def free_memory():
    gc.collect()


if __name__ == "__main__":
    import matplotlib.pyplot as plt
    import torch.nn.functional as F

    this = sys.modules[__name__]
    for name in ("softmax", "causal_mask", "layer_norm"):
        print(name, callable(getattr(this, name)), _takes(getattr(this, name), "dim"))
    torch.manual_seed(0)
    x = torch.randn(2, 4, 8)
    print("softmax matches:", torch.allclose(softmax(x), torch.softmax(x, dim=-1)))
    q = k = v = torch.randn(1, 5, 8)
    out, w = scaled_dot_product_attention(q, k, v, causal_mask(5))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    print("attention matches:", torch.allclose(out, ref, atol=1e-6))
    g, b = torch.ones(8), torch.zeros(8)
    print("layer norm matches:", torch.allclose(layer_norm(x, g, b), F.layer_norm(x, (8,), g, b)))
    free_memory()
    plt.imshow(w[0].detach(), cmap="viridis")
    plt.title("causal attention weights")
    plt.colorbar()
    plt.show()
