# mistake: attention fills blocked scores with -1e-9 (a typo for -1e9), which is practically 0, so blocked positions keep their weight
# loses: mask, multi_head, block
# keeps: softmax, attention, split_heads
# hint: mask
# diagnosis: mask_fill_zero
import torch

BLOCKED = -1e-9


def softmax(x, dim=-1):
    x = x - x.amax(dim, keepdim=True)
    x = x.exp()
    return x / x.sum(dim, keepdim=True)


def causal_mask(T):
    return torch.ones(T, T).triu(diagonal=1).bool()


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    s = torch.einsum("...id,...jd->...ij", q, k) * d_k ** -0.5
    if mask is not None:
        s = s.masked_fill(mask, BLOCKED)
    a = softmax(s, dim=-1)
    return torch.einsum("...ij,...jd->...id", a, v), a


def split_heads(x, n_heads):
    *batch, T, D = x.shape
    return x.view(*batch, T, n_heads, D // n_heads).permute(
        *range(len(batch)), len(batch) + 1, len(batch), len(batch) + 2)


def merge_heads(x):
    *batch, H, T, d = x.shape
    n = len(batch)
    return x.permute(*range(n), n + 1, n, n + 2).reshape(*batch, T, H * d)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    c = x if context is None else context
    q = split_heads(torch.einsum("...td,de->...te", x, params["w_q"]), n_heads)
    k = split_heads(torch.einsum("...td,de->...te", c, params["w_k"]), n_heads)
    v = split_heads(torch.einsum("...td,de->...te", c, params["w_v"]), n_heads)
    o, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    return torch.einsum("...td,de->...te", merge_heads(o), params["w_o"])


def layer_norm(x, gamma, beta, eps=1e-5):
    m = x.mean(-1, keepdim=True)
    v = (x - m).square().mean(-1, keepdim=True)
    return (x - m) * torch.rsqrt(v + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask=mask),
                   params["ln1_gamma"], params["ln1_beta"])
    ff = torch.relu(torch.einsum("...td,df->...tf", h, params["w1"]) + params["b1"])
    ff = torch.einsum("...tf,fd->...td", ff, params["w2"]) + params["b2"]
    return layer_norm(h + ff, params["ln2_gamma"], params["ln2_beta"])
