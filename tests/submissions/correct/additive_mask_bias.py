# mistake: none
# loses:
# keeps: softmax, attention, mask, split_heads, multi_head, block
# hint:
import torch
import torch.nn.functional as F


def softmax(x, dim=-1):
    # stable softmax: shift by the maximum along `dim` (shift-invariance)
    z = x - torch.amax(x, dim=dim, keepdim=True).detach()
    num = z.exp()
    return num / num.sum(dim=dim, keepdim=True)


def causal_mask(T):
    idx = torch.arange(T)
    return idx[None, :] > idx[:, None]


def _mask_to_bias(mask, dtype):
    # True (blocked) -> large negative number, False -> 0
    bias = torch.zeros(mask.shape, dtype=dtype)
    return bias.masked_fill(mask, -1e9)


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = torch.tensor(q.shape[-1], dtype=q.dtype)
    logits = q.matmul(k.transpose(-2, -1)) / torch.sqrt(d_k)
    if mask is not None:
        logits = logits + _mask_to_bias(mask, logits.dtype)
    probs = softmax(logits, dim=-1)
    return probs.matmul(v), probs


def split_heads(x, n_heads):
    d_head = x.size(-1) // n_heads
    return x.view(x.shape[:-1] + (n_heads, d_head)).swapaxes(-2, -3)


def merge_heads(x):
    y = x.swapaxes(-2, -3)
    return y.reshape(y.shape[:-2] + (-1,))


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    kv = x if context is None else context
    q, k, v = (split_heads(t @ params[name], n_heads)
               for t, name in ((x, "w_q"), (kv, "w_k"), (kv, "w_v")))
    attended, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    return merge_heads(attended) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = torch.mean(x, dim=-1, keepdim=True)
    var = torch.mean(torch.square(x - mean), dim=-1, keepdim=True)
    return torch.addcmul(beta, gamma, (x - mean) / torch.sqrt(var + eps))


def transformer_block(x, params, n_heads, mask=None):
    p = params
    h = layer_norm(x + multi_head_attention(x, p, n_heads, mask=mask), p["ln1_gamma"], p["ln1_beta"])
    ffn = F.linear(F.relu(F.linear(h, p["w1"].T, p["b1"])), p["w2"].T, p["b2"])
    return layer_norm(h + ffn, p["ln2_gamma"], p["ln2_beta"])
