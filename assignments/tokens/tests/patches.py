"""Question patches: an image cut into square patches, each flattened into one token."""
from otter.test_files import test_case

from autograder.cases import Question, randn, snapshot, tensor

OK_FORMAT = False

name = "patches"
points = 5

q = Question(name, forbidden=["torch.nn.functional.unfold"],
             shape_hint="the patches are (..., N, C * P * P) with N = (H // P) * (W // P); "
                        "H != W in some cases")


@test_case(name="a 4 x 4 image of one channel, 2 x 2 patches", points=1, hidden=False)
def one_channel(patchify):
    """Values 0..15 row by row: the first patch (top left) holds 0, 1, 4, 5, the second (top
    right) 2, 3, 6, 7."""
    image = tensor([[[float(4 * r + c) for c in range(4)] for r in range(4)]])
    q.check("patchify", patchify, image, 2, expected=snapshot("one_channel"))


@test_case(name="two channels, a 2 x 4 image, 2 x 2 patches", points=1, hidden=False)
def two_channels(patchify):
    """Channel 0 holds 0..7 and channel 1 holds 10..17: each token lists a patch's four values
    of channel 0, then its four of channel 1."""
    image = tensor([[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]],
                    [[10.0, 11.0, 12.0, 13.0], [14.0, 15.0, 16.0, 17.0]]])
    q.check("patchify", patchify, image, 2, expected=snapshot("two_channels"))


@test_case(name="a batch of images, float64", points=1, hidden=True)
def batched(patchify):
    q.check("patchify", patchify, randn(2, 3, 8, 12, seed=501, dtype="float64"), 4, seed=21)


@test_case(name="extra leading dimensions, H != W", points=1, hidden=True)
def leading_dims(patchify):
    q.check("patchify", patchify, randn(2, 2, 1, 6, 9, seed=502), 3, seed=22)


@test_case(name="lesson: a 224 x 224 image in 16 x 16 patches is 196 tokens", points=1,
           hidden=True)
def lesson_224(patchify):
    q.check("patchify", patchify, randn(3, 224, 224, seed=503), 16, seed=23)
