# attack: at import probes for privileges: effective uid 0, setuid(0)/setresuid, capabilities in /proc/self/status, reading /etc/shadow and /root, creating files in /, /etc and /usr, raising the hard RLIMIT_AS/RLIMIT_NPROC, negative nice, a writable docker socket, and an unset no_new_privs; softmax raises RuntimeError listing whatever succeeded
# target: all
# expect: full marks: every probe fails inside the sandbox (unprivileged user, no capabilities, read-only system dirs, limits that cannot be raised, no_new_privs set), so softmax returns the correct answer; any probe that succeeds shows up as a softmax error naming it
"""A self-reporting privilege check from inside the worker.

Files it manages to create in system directories are removed again straight away.
"""

import math

import torch

# ---------------------------------------------------------------------------------------------
# A correct implementation (the same in every file of this folder). The public functions only
# delegate to private helpers, so an attack that replaces one public function below leaves the
# other questions intact.
# ---------------------------------------------------------------------------------------------


def _softmax(x, dim=-1):
    shifted = x - torch.amax(x, dim=dim, keepdim=True)
    e = torch.exp(shifted)
    return e / torch.sum(e, dim=dim, keepdim=True)


def _causal_mask(T):
    rows = torch.arange(T).unsqueeze(1)
    cols = torch.arange(T).unsqueeze(0)
    return cols > rows


def _attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = _softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


def _split_heads(x, n_heads):
    d_head = x.shape[-1] // n_heads
    return x.unflatten(-1, (n_heads, d_head)).transpose(-3, -2)


def _merge_heads(x):
    return x.transpose(-3, -2).flatten(-2)


def _multi_head_attention(x, params, n_heads, mask=None, context=None):
    source = x if context is None else context
    q = _split_heads(x @ params["w_q"], n_heads)
    k = _split_heads(source @ params["w_k"], n_heads)
    v = _split_heads(source @ params["w_v"], n_heads)
    out, _ = _attention(q, k, v, mask)
    return _merge_heads(out) @ params["w_o"]


def _layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dim=-1, keepdim=True)
    return centered / torch.sqrt(var + eps) * gamma + beta


def _transformer_block(x, params, n_heads, mask=None):
    attn = _multi_head_attention(x, params, n_heads, mask)
    h = _layer_norm(x + attn, params["ln1_gamma"], params["ln1_beta"])
    ffn = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return _layer_norm(h + ffn, params["ln2_gamma"], params["ln2_beta"])


def softmax(x, dim=-1):
    return _softmax(x, dim)


def causal_mask(T):
    return _causal_mask(T)


def scaled_dot_product_attention(q, k, v, mask=None):
    return _attention(q, k, v, mask)


def split_heads(x, n_heads):
    return _split_heads(x, n_heads)


def merge_heads(x):
    return _merge_heads(x)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    return _multi_head_attention(x, params, n_heads, mask, context)


def layer_norm(x, gamma, beta, eps=1e-5):
    return _layer_norm(x, gamma, beta, eps)


def transformer_block(x, params, n_heads, mask=None):
    return _transformer_block(x, params, n_heads, mask)


# ---------------------------------------------------------------------------------------------
# The attack
# ---------------------------------------------------------------------------------------------

import os as _os

_escalations = []


def _probe(label, fn):
    try:
        if fn():
            _escalations.append(label)
    except Exception:
        pass


def _setuid_root():
    _os.setuid(0)
    return True


def _setresuid_root():
    _os.setresuid(0, 0, 0)
    return True


def _capabilities():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16) != 0
    return False


def _no_new_privs_unset():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("NoNewPrivs:"):
                return line.split()[1] == "0"
    return False


def _read_shadow():
    with open("/etc/shadow") as f:
        return bool(f.read(1))


def _list_root():
    _os.listdir("/root")
    return True


def _create_in(directory):
    def attempt():
        path = _os.path.join(directory, ".hostile_probe_%d" % _os.getpid())
        fd = _os.open(path, _os.O_WRONLY | _os.O_CREAT | _os.O_EXCL, 0o600)
        _os.close(fd)
        _os.remove(path)
        return True
    return attempt


def _raise_hard_limit(name):
    def attempt():
        import resource
        which = getattr(resource, name)
        soft, hard = resource.getrlimit(which)
        if hard == resource.RLIM_INFINITY:
            return False
        resource.setrlimit(which, (soft, hard + 1))
        resource.setrlimit(which, (soft, hard))
        return True
    return attempt


def _negative_nice():
    before = _os.nice(0)
    _os.nice(-1)
    return _os.nice(0) < before


def _docker_socket():
    path = "/var/run/docker.sock"
    return _os.path.exists(path) and _os.access(path, _os.W_OK)


for _label, _fn in (
        ("effective uid is 0", lambda: _os.geteuid() == 0),
        ("setuid(0)", _setuid_root),
        ("setresuid(0, 0, 0)", _setresuid_root),
        ("non-zero effective capabilities", _capabilities),
        ("no_new_privs not set", _no_new_privs_unset),
        ("read /etc/shadow", _read_shadow),
        ("list /root", _list_root),
        ("create a file in /", _create_in("/")),
        ("create a file in /etc", _create_in("/etc")),
        ("create a file in /usr", _create_in("/usr")),
        ("raise hard RLIMIT_AS", _raise_hard_limit("RLIMIT_AS")),
        ("raise hard RLIMIT_NPROC", _raise_hard_limit("RLIMIT_NPROC")),
        ("negative nice", _negative_nice),
        ("writable docker socket", _docker_socket)):
    _probe(_label, _fn)

try:
    _os.write(2, ("privilege probe: %r\n" % (_escalations,)).encode())
except OSError:
    pass


def softmax(x, dim=-1):
    if _escalations:
        raise RuntimeError("privileges available in the worker: " + ", ".join(_escalations))
    return _softmax(x, dim)
