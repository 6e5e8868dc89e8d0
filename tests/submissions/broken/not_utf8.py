import torch

def softmax(x, dim=-1):
    return x  # café
