import torch

WEIGHTS = torch.load("my_weights.pt")  # a file that only exists on the student's laptop


def softmax(x, dim=-1):
    return x
