# mistake: no causal mask: with several new tokens, each reads the later ones
# loses: decoding
# keeps: patches, positions, loss
# hint: values
# diagnosis: no_causal_mask
import math

import torch


def patchify(images, patch_size):
    p = patch_size
    *batch, c, h, w = images.shape
    grid = images.reshape(*batch, c, h // p, p, w // p, p)
    grid = grid.movedim((-4, -2), (-5, -4))   # (..., h // p, w // p, c, p, p)
    return grid.reshape(*batch, (h // p) * (w // p), c * p * p)


def sinusoidal_positions(T, d_model, base=10000.0, dtype=torch.float32):
    t = torch.arange(T, dtype=dtype).unsqueeze(1)
    freq = base ** (-torch.arange(0, d_model, 2, dtype=dtype) / d_model)
    angle = t * freq
    pe = torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1)   # (T, d/2, 2)
    return pe.reshape(T, d_model)


def add_positions(tokens, base=10000.0):
    T, d_model = tokens.shape[-2:]
    return tokens + sinusoidal_positions(T, d_model, base, dtype=tokens.dtype)


def decode_step(x, params, cache=None):
    q = x @ params["w_q"]
    k = x @ params["w_k"]
    v = x @ params["w_v"]
    if cache is not None:
        k = torch.cat([cache["k"], k], dim=-2)
        v = torch.cat([cache["v"], v], dim=-2)
    n_new, n_all = x.shape[-2], k.shape[-2]
    past = n_all - n_new
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    rows = torch.arange(n_new).unsqueeze(1) + past
    cols = torch.arange(n_all).unsqueeze(0)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v @ params["w_o"], {"k": k, "v": v}


def next_token_loss(logits, targets, ignore_index=-100):
    keep = targets != ignore_index
    m = logits.max(dim=-1, keepdim=True).values
    lse = (logits - m).exp().sum(dim=-1).log() + m.squeeze(-1)
    right_logit = logits.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    per_position = (lse - right_logit)[keep]
    loss = per_position.mean()
    hits = (logits.argmax(dim=-1) == targets)[keep]
    return loss, hits.sum().item() / hits.numel()
