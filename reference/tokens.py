"""Hidden reference implementation of the `tokens` assignment (torch track).

Never shipped to students. The grader calls these functions in its trusted process to compute
expected outputs and gradients, and `autograder snapshot` records them for the public cases.
"""
from __future__ import annotations

import math

import torch


def patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    *lead, C, H, W = images.shape
    P = patch_size
    n = len(lead)
    x = images.reshape(*lead, C, H // P, P, W // P, P)
    # (..., C, rows, P, cols, P) -> (..., rows, cols, C, P, P)
    x = x.permute(*range(n), n + 1, n + 3, n, n + 2, n + 4)
    return x.reshape(*lead, (H // P) * (W // P), C * P * P)


def sinusoidal_positions(T: int, d_model: int, base: float = 10000.0,
                         dtype: torch.dtype = torch.float32) -> torch.Tensor:
    position = torch.arange(T, dtype=torch.float64)[:, None]
    pair = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = position / base ** (pair / d_model)
    out = torch.zeros(T, d_model, dtype=torch.float64)
    out[:, 0::2] = torch.sin(angle)
    out[:, 1::2] = torch.cos(angle)
    return out.to(dtype)


def add_positions(tokens: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    *_, T, d_model = tokens.shape
    return tokens + sinusoidal_positions(T, d_model, base, dtype=tokens.dtype)


def decode_step(x, params, cache=None):
    q = x @ params["w_q"]
    k_new, v_new = x @ params["w_k"], x @ params["w_v"]
    k = k_new if cache is None else torch.cat([cache["k"], k_new], dim=-2)
    v = v_new if cache is None else torch.cat([cache["v"], v_new], dim=-2)
    S, L = x.shape[-2], k.shape[-2] - x.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    # New token s sits at position L + s: it may read positions 0 .. L + s.
    blocked = torch.ones(S, L + S, dtype=torch.bool).triu(diagonal=L + 1)
    scores = scores.masked_fill(blocked, float("-inf"))
    scores = scores - scores.amax(dim=-1, keepdim=True)
    weights = torch.exp(scores)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights @ v @ params["w_o"], {"k": k, "v": v}


def next_token_loss(logits, targets, ignore_index=-100):
    counted = targets != ignore_index
    safe = torch.where(counted, targets, torch.zeros_like(targets))
    top = logits.amax(dim=-1, keepdim=True)
    log_norm = top.squeeze(-1) + torch.log(torch.exp(logits - top).sum(dim=-1))
    picked = logits.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    n = counted.sum()
    loss = torch.where(counted, log_norm - picked, torch.zeros_like(picked)).sum() / n
    right = (logits.argmax(dim=-1) == targets) & counted
    return loss, float(right.sum()) / float(n)
