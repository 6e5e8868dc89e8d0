import torch


def softmax(x, dim=-1)
    return x.exp() / x.exp().sum(dim, keepdim=True)
