"""Refuse a question's forbidden routines where every route to them meets.

What a forbidden name takes is plain data (`routines.Plan`: operators, Python-level targets,
a signature), sent by the trusted side. Four kinds of refusal:

* **operators** (`plan.ops`): a kernel is registered, through the dispatcher's own registration
  API, for every overload of each operator at every key where a call of it on CPU data runs
  (autograd's, where a composite runs its decomposition, and the CPU backends). Whatever
  Python name, alias, container, private entry point or custom `autograd.Function` led there,
  forward or backward, the call reaches the kernel.
* **library code computing the routine** (`plan.signatures`): a kernel on each operator of a
  signature walks the Python stack above it (`observe.py`); library code that performs the
  whole signature in one call is refused, wherever it lives and whatever it is called.
* **Python-level functions** (`plan.python`: SciPy's, a NumPy ufunc, a torch function without
  an operator of its own): the function object itself is changed (its `__code__`, so every
  alias meets it; a ufunc or a built-in is replaced wherever a module holds it, `.reduce` and
  `.accumulate` included). torch's own Python implementations of the operators (its references
  and decomposition tables, `library_routines.py`) have their code swapped for a refusal.
* **compilers inside torch that run past the dispatcher** (`bypass.py`), refused outright.

In the sandboxed worker (`install`) everything is installed before the student's file runs
and never removed; every refusal reads the armed state (`armed.py`) on each use and lets the
library run until the import is over (a self-test at the top level of the file costs
nothing, in `grade` as in `check`), then refuses for good. A refusal calls `on_hit(code)`,
which in the worker ends the process with an exit status naming it (`evidence.py`). In the student's own process
(`autograder check`, otter: `make_guard`) the same refusals are put in place around each call
and taken away after it; a refusal records the name and raises.

State lives in closures and in torch's dispatcher, made before any student code runs and held
only by the engine's frames or by the dispatcher (which Python cannot enumerate), never in a
module global: the original kernels and functions a dormant refusal runs are reachable from no
Python object the student's code can get.
"""
from __future__ import annotations

import importlib
import sys
import types
import warnings
from typing import Any, Callable, Iterable, Sequence

from . import armed as armed_state
from . import bypass
from .forbidden_ops import KEYS, overloads, own_kernel_keys, runtime_keys
from .library_routines import implementations
from .observe import make_classifier, make_watch
from .routines import Plan

# The source of the refusing code: string constants stand where the objects go (`_bind`), so
# the code reads no global name and its function needs no closure.
_REFUSE_SOURCE = 'def refuse(*args, **kwargs):\n    return "@on_hit"("@code")\n'
# A kernel that refuses once the refusals hold, and runs torch's own kernel until then.
_KERNEL_SOURCE = ('def refuse(keyset, *args, **kwargs):\n'
                  '    if "@armed"():\n'
                  '        return "@on_hit"("@code")\n'
                  '    return "@original"(keyset, *args, **kwargs)\n')
# A kernel on an operator of a signature: watch where it runs from, then run torch's kernel.
_OBSERVE_SOURCE = ('def observe(keyset, *args, **kwargs):\n'
                   '    if "@armed"():\n'
                   '        "@watch"("@spec")\n'
                   '    return "@original"(keyset, *args, **kwargs)\n')
# A Python-level function, refused through an operator of the grader's own whose kernel holds
# the original (nothing else does): it runs the original until the refusals hold.
_PYTHON_SOURCE = ('def refuse(*args, **kwargs):\n'
                  '    "@slot".append((args, kwargs))\n'
                  '    "@op"("@token", "@index")\n'
                  '    return "@slot".pop()\n')
_RUN_SOURCE = ('def run(token, index):\n'
               '    if "@armed"():\n'
               '        return "@on_hit"("@codes"[index])\n'
               '    args, kwargs = "@slot".pop()\n'
               '    "@slot".append("@originals"[index](*args, **kwargs))\n'
               '    return token\n')
NAMESPACE = "refusals"
UFUNC_METHODS = ("__call__", "reduce", "accumulate", "reduceat", "outer", "at")
UFUNC_VALUES = ("__name__", "__doc__", "nin", "nout", "nargs", "ntypes", "types", "identity",
                "signature")


def _bind(template: types.CodeType, consts: dict[str, Any]) -> types.CodeType:
    """`template` with the objects of `consts` where its "@name" string constants stand."""
    return template.replace(co_consts=tuple(consts.get(c, c) if isinstance(c, str) else c
                                            for c in template.co_consts))


_compiled: dict[tuple[str, tuple[str, ...]], types.CodeType] = {}


def _code(source: str, freevars: tuple[str, ...] = ()) -> types.CodeType:
    """The code of the one `def` of `source`; with `freevars`, the same code with those free
    variables (to replace the code of a function that has a closure: `__code__` must keep
    the closure's size)."""
    key = (source, freevars)
    if key not in _compiled:
        if freevars:
            head, body = source.split("\n", 1)
            source = (f"def outer():\n    {' = '.join(freevars)} = None\n"
                      f"    {head}\n        ({', '.join(freevars)},)\n"
                      + "".join(f"    {line}\n" for line in body.splitlines()) +
                      f"    return {head.split()[1].split('(')[0]}\n")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)   # "'str' object is not callable"
            module = compile(source, "<forbidden routine>", "exec")
        code = next(c for c in module.co_consts if isinstance(c, types.CodeType))
        if freevars:
            code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
        _compiled[key] = code
    return _compiled[key]


# What torch's C++ may look up from the frame of a kernel it runs (an import, by name).
_BUILTINS = {"__import__": __import__}


def isolated(source: str, consts: dict[str, Any], name: str) -> Callable:
    """A function from `source` (one `def` whose body reads no global name: string constants
    such as "@x" stand where the objects of `consts` go), with no globals but `__import__`
    (which torch's C++ uses when it converts a value): it holds nothing but those objects, so
    handing it to the student's code hands out nothing of the engine."""
    return types.FunctionType(_bind(_code(source), consts), {"__builtins__": _BUILTINS}, name)


def _swapped_code(source: str, consts: dict[str, Any], function: types.FunctionType
                  ) -> types.CodeType:
    return _bind(_code(source, function.__code__.co_freevars), consts)


def own_code() -> set[types.CodeType]:
    """The code objects of this module's functions (nested ones included)."""
    found, todo = set(), [f.__code__ for f in (_bind, _code, isolated, _swapped_code, _build,
                                               install, make_guard)]
    while todo:
        code = todo.pop()
        found.add(code)
        todo += [c for c in code.co_consts if isinstance(c, types.CodeType) and c not in found]
    return found


def python_target(name: str, load: bool = True):
    """(owner, attribute, object) for a dotted `package.module.function`, or None. Without
    `load`, only modules already imported count."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is None:
            if not load:
                continue
            try:
                module = importlib.import_module(".".join(parts[:cut]))
            except Exception:  # noqa: BLE001 - not a module, or not installed
                continue
        owner: Any = module
        try:
            for a in parts[cut:-1]:
                owner = getattr(owner, a)
            return owner, parts[-1], getattr(owner, parts[-1])
        except AttributeError:
            return None
    return None


def _functions_of(function: Any) -> list[types.FunctionType]:
    """A Python function and every function it wraps (`__wrapped__`, as decorators record it):
    each is changed, so that neither the wrapper nor the original reached another way runs."""
    found: list[types.FunctionType] = []
    while isinstance(function, types.FunctionType) and function not in found:
        found.append(function)
        function = getattr(function, "__wrapped__", None)
    return found


def _copy(f: types.FunctionType) -> types.FunctionType:
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    g.__kwdefaults__ = f.__kwdefaults__
    g.__dict__.update(f.__dict__)
    return g


_HOMES: dict[int, list[tuple[dict, str]]] = {}   # id(object) -> (module dict, key) holding it


def _homes(obj: Any) -> list[tuple[dict, str]]:
    """Every module attribute holding `obj` (a ufunc or a built-in is no function whose code can
    change: it is replaced where modules hold it)."""
    if id(obj) not in _HOMES:
        found = []
        for module in list(sys.modules.values()):
            namespace = getattr(module, "__dict__", None)
            if not isinstance(namespace, dict):
                continue
            found += [(namespace, k) for k, v in list(namespace.items()) if v is obj]
        _HOMES[id(obj)] = found
    return _HOMES[id(obj)]


def _is_ufunc(obj: Any) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(obj, np.ufunc)


def _originals(overload: str, key: str) -> Callable | None:
    """torch's own kernel of `aten::<overload>` at `key`, callable with a dispatch key set (None
    where this torch has no way to get it)."""
    import torch

    get = getattr(torch._C, "_dispatch_get_computed_kernel_for_dispatch_key", None)
    if get is None:
        return None
    try:
        found = get(f"aten::{overload}", key).call_boxed
    except (RuntimeError, AttributeError):
        # Once registrations made ahead are dropped (`drop_ahead`), torch no longer hands out
        # a few kernels it takes from a composite (`_sparse_softmax.int` at
        # AutogradNestedTensor; its dispatch table reads as before): the one first found stands.
        return _TORCH_KERNELS.get((overload, key))
    _TORCH_KERNELS.setdefault((overload, key), found)
    return found


# torch's own kernels as first looked up, in the fork server, before anything was registered
# there; emptied in the worker once its refusals are built (`install`), like the builds.
_TORCH_KERNELS: dict[tuple[str, str], Callable] = {}


_OP_KEYS: dict[tuple[str, bool], list[tuple[str, tuple[str, ...]]]] = {}


def _op_keys(op: str, watch: bool) -> list[tuple[str, tuple[str, ...]]]:
    """[(overload, keys)] where a call of `op` runs on CPU data: every key, to refuse it (the
    autograd keys too, where a composite runs its decomposition); with `watch`, the backend
    keys where it has a kernel of its own (a kernel that lets the call through must not stand
    in for a composite's decomposition, which autograd relies on)."""
    if (op, watch) not in _OP_KEYS:
        _OP_KEYS[(op, watch)] = [(o, tuple(own_kernel_keys(o) if watch else runtime_keys(o, KEYS)))
                                 for o in overloads(op)]
    return _OP_KEYS[(op, watch)]


class Built:
    """What arming takes: dispatcher registrations and attribute changes, made in order."""

    def __init__(self) -> None:
        self.registrations: list[tuple[str, str, Callable]] = []   # (overload, key, kernel)
        self.swaps: list[tuple[Any, str, Any]] = []               # (object, attribute, value)
        self.run_kernel: Callable | None = None    # the Python-level refusals' operator
        self.problems: list[str] = []
        self.tokens: dict = {}       # shared with the audit hook: the watch's frame reads
        # Python-level targets whose module was not imported yet: (code, dotted name), and the
        # top-level packages imported when this was built
        self.pending: list[tuple[Any, str]] = []
        self.had: set[str] = set()
        self.refusal: "_Refusals | None" = None


class _Refusals:
    """Makes the refusing stand-ins of Python-level functions. `dormant` (the worker): each
    runs the original through the grader's operator (`refusals::run`), whose kernel alone
    holds the originals, until the refusals hold (`armed`); otherwise each refuses at once."""

    def __init__(self, on_hit: Callable, armed: Callable, dormant: bool):
        self.on_hit, self.armed, self.dormant = on_hit, armed, dormant
        self.originals: list[Callable] = []
        self.codes: list[Any] = []
        self.slot: list = []
        self.op = self.token = None

    def __call__(self, code: Any, original: Callable,
                 function: types.FunctionType | None = None):
        """The code to put in `function` (the original's own function object), or a function
        that stands for `original`, refusing with `code`."""
        if not self.dormant:
            consts = {"@on_hit": self.on_hit, "@code": code}
            return _swapped_code(_REFUSE_SOURCE, consts, function) if function else \
                isolated(_REFUSE_SOURCE, consts, "refuse")
        if self.op is None:
            import torch

            self.op, self.token = _run_operator(), torch.zeros(1)
        index = len(self.originals)
        self.originals.append(original)
        self.codes.append(code)
        consts = {"@slot": self.slot, "@op": self.op, "@token": self.token, "@index": index}
        return _swapped_code(_PYTHON_SOURCE, consts, function) if function else \
            isolated(_PYTHON_SOURCE, consts, "refuse")

    def kernel(self) -> Callable | None:
        """The grader's operator's kernel (it alone holds the originals), or None."""
        if not (self.dormant and self.originals):
            return None
        return isolated(_RUN_SOURCE, {
            "@armed": self.armed, "@on_hit": self.on_hit, "@codes": tuple(self.codes),
            "@slot": self.slot, "@originals": tuple(self.originals)}, "run")


def _build(names: Sequence[str], plans: Sequence[Plan], on_hit: Callable,
           code_of: Callable[[str, int], Any], armed: Callable, *, dormant: bool,
           tokens: dict | None, stop: Iterable[Any], load: bool) -> Built:
    """What refusing `names` (with their `plans`) takes. `dormant`: the refusals let the
    library run until `armed()` (the worker), else they refuse whenever they are in place
    (the student's own process). `load`: import the modules of torch's implementations (the
    worker) and of the Python-level targets (the student's own process); the worker leaves a
    target whose module is not imported in `pending`, refused when it is (`late`)."""
    built = Built()
    refused: dict[str, int] = {}
    for i, plan in enumerate(plans):
        for op in plan.ops:
            refused.setdefault(op, i)
    # Signatures: each distinct one gets a slot; each of its operators, its group's bit.
    watched: dict[str, list[tuple]] = {}
    slots: dict[tuple, int] = {}
    for i, plan in enumerate(plans):
        for signature in plan.signatures:
            groups = tuple(tuple(g) for g in signature)
            if not groups or groups in slots:
                continue
            slots[groups] = len(slots)
            full = (1 << len(groups)) - 1
            for bit, group in enumerate(groups):
                for op in group:
                    watched.setdefault(op, []).append(
                        (slots[groups], 1 << bit, full, code_of("library", i)))
    watch = None
    if tokens is not None:
        built.tokens = tokens
    if watched:
        watch = make_watch(isolated, make_classifier(stop), on_hit, built.tokens)
    for op in list(refused) + [o for o in watched if o not in refused]:
        for overload, keys in _op_keys(op, op not in refused):
            for key in keys:
                original = _originals(overload, key)
                if op in refused:
                    code = code_of("routine", refused[op])
                    if dormant and original is None:
                        built.problems.append("no way to run torch's kernel before the refusals "
                                              "hold")
                        continue
                    kernel = isolated(_KERNEL_SOURCE, {
                        "@armed": armed, "@on_hit": on_hit, "@code": code,
                        "@original": original}, "refuse")
                else:
                    if original is None:
                        note = "library code computing a forbidden routine is not checked here"
                        if note not in built.problems:
                            built.problems.append(note)
                        continue
                    spec = tuple(watched[op])
                    kernel = isolated(_OBSERVE_SOURCE, {
                        "@armed": armed, "@watch": watch, "@spec": spec,
                        "@original": original}, "observe")
                built.registrations.append((overload, key, kernel))
    refusal = built.refusal = _Refusals(on_hit, armed, dormant)
    built.had = {d.split(".")[0] for plan in plans for d in plan.python
                 if d.split(".")[0] in sys.modules}
    _python_level(built, names, plans, refusal, code_of, load=not dormant)
    # torch's Python implementations of the operators (its references, its decompositions).
    changed = {id(w) for w, attr, _ in built.swaps if attr == "__code__"}
    for i, plan in enumerate(plans):
        for function in implementations(plan.ops, load).values():
            for f in _functions_of(function):
                if id(f) not in changed:
                    changed.add(id(f))
                    built.swaps.append((f, "__code__", refusal(code_of("routine", i),
                                                              _copy(f), f)))
    if names:
        built.swaps += bypass.swaps(refusal, isolated, lambda j: code_of("compiler", j))
    built.run_kernel = refusal.kernel()
    return built


def _python_level(built: Built, names: Sequence[str], plans: Sequence[Plan],
                  refusal: _Refusals, code_of: Callable, load: bool = True) -> None:
    """The swaps refusing each plan's Python-level targets. A target that is a forbidden name
    itself is refused with its own name's code (feedback names what was called). Without
    `load`, a target whose module is not imported yet is left in `built.pending`."""
    seen: set[int] = set()
    order = [(i, d) for i, plan in enumerate(plans) for d in plan.python if d == names[i]] + \
        [(i, d) for i, plan in enumerate(plans) for d in plan.python]
    done: set[str] = set()
    for i, dotted in order:
        code = code_of("routine", i)
        # A package the process has not imported is not imported for its target (SciPy's
        # take seconds): the target waits until it is (`pending`).
        target = python_target(dotted, load and dotted.split(".")[0] in sys.modules)
        if target is None:
            if dotted not in done:
                built.pending.append((code, dotted))
            done.add(dotted)
            continue
        done.add(dotted)
        _python_swaps(built, refusal, code, target, seen)


def _python_swaps(built: Built, refusal: _Refusals, code: Any, target: tuple,
                  seen: set[int]) -> None:
    """The swaps refusing one Python-level target, (owner, attribute, object)."""
    owner, attr, obj = target
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, types.FunctionType):
        # In place: every reference to the function object meets the refusal.
        for f in _functions_of(obj):
            built.swaps.append((f, "__code__", refusal(code, _copy(f), f)))
    elif _is_ufunc(obj):
        stand_in = _ufunc_stand_in(obj, lambda m, code=code: refusal(code, m))
        built.swaps += [(where, key, stand_in) for where, key in _homes(obj)]
    else:
        value = refusal(code, obj)
        homes = [(owner, attr)]
        home = sys.modules.get(getattr(obj, "__module__", None) or "")
        short = getattr(obj, "__name__", None)
        if home is not None and short and getattr(home, short, None) is obj:
            homes.append((home, short))
        homes += [(w, k) for w, k in _homes(obj) if (w, k) not in homes]
        built.swaps += [(w, k, value) for w, k in homes]


def _ufunc_stand_in(ufunc: Any, refusal: Callable[[Callable], Callable]) -> Any:
    """An object in the ufunc's place: calling it, or any of its methods (`.reduce`,
    `.accumulate`, ...), is refused as the ufunc; its descriptive attributes are the ufunc's."""
    methods = {m: getattr(ufunc, m) for m in UFUNC_METHODS if hasattr(ufunc, m)}
    namespace: dict[str, Any] = {}
    for m, bound in methods.items():
        run = refusal(bound)
        namespace[m] = staticmethod(run) if m != "__call__" else _drop_self(run)
    for v in UFUNC_VALUES:
        if hasattr(ufunc, v):
            namespace[v] = getattr(ufunc, v)
    namespace["__repr__"] = isolated('def __repr__(self):\n    return "@text"\n',
                                     {"@text": repr(ufunc)}, "__repr__")
    return type(type(ufunc).__name__, (), namespace)()


_DROP_SELF = 'def __call__(self, *args, **kwargs):\n    return "@run"(*args, **kwargs)\n'


def _drop_self(run: Callable) -> Callable:
    return isolated(_DROP_SELF, {"@run": run}, "__call__")


_RUN_OP: list = []


def _run_operator():
    """The grader's operator (`refusals::run`) through which Python-level refusals run their
    original: defined once per process; each worker registers its kernel."""
    import torch

    if not _RUN_OP:
        import ctypes

        lib = torch._C._dispatch_library("DEF", NAMESPACE, "", "<forbidden routine>", 0)
        lib.define("run(Tensor token, int index) -> Tensor")
        # Kept alive by a reference count no Python object owns: nothing can reset it.
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(lib))
        del lib
        _RUN_OP.append(getattr(getattr(torch.ops, NAMESPACE), "run").default)
    return _RUN_OP[0]


def prepare(ops: Iterable[str] = (), python: Iterable[str] = ()) -> None:
    """Everything a worker's `install` looks up, looked up now (in the fork server): each
    operator's overloads and keys, torch's Python implementations of them, the Python-level
    targets and where modules hold them, the grader's operator, and the refusing code."""
    ops = list(ops)
    for op in ops:
        _op_keys(op, False)
        _op_keys(op, True)
    implementations(ops)
    for name in python:
        target = python_target(name)
        if target is not None and not isinstance(target[2], types.FunctionType):
            _homes(target[2])
    _run_operator()
    for source in (_REFUSE_SOURCE, _KERNEL_SOURCE, _OBSERVE_SOURCE, _PYTHON_SOURCE, _RUN_SOURCE):
        _code(source)


_PREBUILT: dict[tuple, Built] = {}


def arming_key(names: Sequence[str], plans: Sequence[Plan]) -> tuple:
    """What identifies an arming: the names refused and their plans."""
    return tuple(names), repr([p.to_json() for p in plans])


def _register(built: Built, make: Callable) -> list:
    """Register `built`'s kernels (refusing and watching kernels at torch's operators, the
    grader's operator's kernel); returns the libraries that hold them (each library's
    registrations end with it)."""
    libraries: list = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
        if built.registrations:
            libraries.append(make("IMPL", "aten", "", "<forbidden routine>", 0))
            for overload, key, kernel in built.registrations:
                libraries[-1].impl(overload, key, kernel, True)
        if built.run_kernel is not None:
            libraries.append(make("IMPL", NAMESPACE, "", "<forbidden routine>", 0))
            libraries[-1].impl("run", "CPU", built.run_kernel, False)
    return libraries


# Registrations made ahead in the fork server (`register_ahead`) for the arming most workers
# get (a submission's first worker refuses every question's routines): {key: the libraries that
# hold them}, one arming at most. They are dormant there (the fork server's refusals never
# hold); a worker armed the same way inherits them through the fork and keeps them (`install`),
# any other worker drops them first. Anything that reads torch's kernels (a build, a lookup of
# keys) runs with them dropped: it must see torch's own.
_AHEAD: dict[tuple, list] = {}


def drop_ahead() -> tuple | None:
    """Take back the registrations made ahead (each library's registrations end with it):
    torch's own kernels are in place again. Returns the arming's key, if there was one."""
    key = None
    while _AHEAD:
        key, libraries = _AHEAD.popitem()
        libraries.clear()
    return key


def register_ahead(key: tuple) -> bool:
    """In the fork server, after `prebuild`: register the kernels of the arming `key`
    (`arming_key`) in this process, so that every worker forked for the same arming inherits
    them instead of registering them again (about 5 ms of a worker's start, most of it copying
    the dispatcher's pages). False (nothing registered) where that cannot be done: the workers
    then register their own."""
    import torch

    if key in _AHEAD:
        return True
    drop_ahead()
    built = _PREBUILT.get(key)
    make = getattr(torch._C, "_dispatch_library", None)
    if built is None or make is None or built.problems:
        return False
    try:
        _AHEAD[key] = _register(built, make)
    except Exception:  # noqa: BLE001 - whatever the registration raised: workers register
        return False
    return True


def prebuild(names: Sequence[str], plans: Sequence[Plan], on_hit: Callable[[int], Any],
             code_of: Callable[[str, int], int], stop: Iterable[Any] = ()) -> None:
    """Build what arming `names` takes (the kernels, the stand-ins, the refusing code) once, in
    the fork server: the workers it forks for the same names inherit it and only register."""
    key = arming_key(names, plans)
    if key in _PREBUILT and any(python_target(d, load=False) is not None
                                for _, d in _PREBUILT[key].pending):
        del _PREBUILT[key]
    if key not in _PREBUILT:
        _PREBUILT[key] = _build(names, plans, on_hit, code_of, armed_state.reader(isolated),
                                dormant=True, tokens=None, stop=stop, load=True)


def install(names: Sequence[str], plans: Sequence[Plan], on_hit: Callable[[int], Any],
            code_of: Callable[[str, int], int], *, stop: Iterable[Any] = ()
            ) -> tuple[int | None, dict, Callable[[str], None]]:
    """Refuse `names` in this process for good: the sandboxed worker's arming, done once,
    before the student's source is imported, from what the trusted side sent. The refusals
    hold from the moment `armed.arm()` runs (after the import); until then they let the
    library run.

    Nothing is kept that could take a refusal back: the registrations' handles are held only
    by reference counts no Python object owns, the originals only by the kernels the
    dispatcher holds. Returns (None, or the index of what could not be installed
    (`evidence.UNARMED`), for the worker to end on before any student code runs; the tokens
    the audit hook shares with the signature's watch; `late(module)`, which the audit hook
    calls when a module is about to be imported: a Python-level target whose module was not
    imported yet is refused as that module is, before the importing code gets it)."""
    import ctypes

    import torch

    key = arming_key(names, plans)
    ahead = _AHEAD.pop(key, None)
    drop_ahead()            # another arming's registrations: torch's own kernels back
    built = _PREBUILT.pop(key, None)
    if built is not None and any(python_target(d, load=False) is not None
                                 for _, d in built.pending):
        built = None        # a module imported since it was built: build again
    if built is None:
        if ahead is not None:
            ahead.clear()   # made for the stale build: dropped before the build reads kernels
            ahead = None
        built = _build(names, plans, on_hit, code_of, armed_state.reader(isolated),
                       dormant=True, tokens=None, stop=stop, load=True)
    _PREBUILT.clear()       # nothing of the other builds stays in the worker
    _TORCH_KERNELS.clear()  # nor torch's kernels: only the refusing kernels hold them
    tokens = built.tokens
    make = getattr(torch._C, "_dispatch_library", None)
    late = _late(built, make)
    if built.problems and any("torch's kernel" in p for p in built.problems):
        return 0, tokens, late
    if (built.registrations or built.run_kernel) and make is None:
        return 0, tokens, late
    try:
        # Registered here, or in the fork server and inherited through the fork: kept for good
        # by a reference count that no Python object owns.
        libraries = ahead if ahead is not None else _register(built, make)
        while libraries:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(libraries.pop()))
    except Exception:  # noqa: BLE001 - whatever the registration raised: fail closed
        return 1, tokens, late
    if not bypass.apply(built.swaps):
        return 2, tokens, late
    torch.compile = bypass.eager_compile(isolated)
    return None, tokens, late


def _late(built: Built, make: Callable | None) -> Callable[[str], None]:
    """`late(module)`: refuse the pending Python-level targets under `module`, which is about
    to be imported: the module is imported first (under every check the importing code would
    meet), then each target is refused as at arming, and the grader's operator gets a kernel
    that holds the new originals too (until the refusals hold the targets still run)."""
    pending = list(built.pending)
    refusal = built.refusal
    seen: set[int] = set()
    busy: list = []
    kept: list = []     # the new kernels' registrations: held by this closure alone
    import_module = importlib.import_module
    catch_warnings, simplefilter = warnings.catch_warnings, warnings.simplefilter

    def late(module: str) -> None:
        if not pending or busy:
            return
        prefix = module + "."
        mine = [(code, dotted) for code, dotted in pending if dotted.startswith(prefix)]
        if not mine:
            return
        busy.append(module)
        try:
            try:
                import_module(module)
            except Exception:  # noqa: BLE001 - the importing code meets the same error
                return
            later = Built()
            for code, dotted in mine:
                target = python_target(dotted, load=False)
                if target is not None:
                    pending.remove((code, dotted))
                    _python_swaps(later, refusal, code, target, seen)
            kernel = refusal.kernel() if refusal is not None else None
            if kernel is not None and make is not None:
                try:
                    with catch_warnings():
                        simplefilter("ignore")   # "overriding a previously registered kernel"
                        lib = make("IMPL", NAMESPACE, "", "<forbidden routine>", 0)
                        lib.impl("run", "CPU", kernel, False)
                    kept.append(lib)
                except Exception:  # noqa: BLE001 - fail closed: refuse them outright
                    refusal.dormant = False
                    later = Built()
                    seen.clear()
                    for code, dotted in mine:
                        target = python_target(dotted, load=False)
                        if target is not None:
                            _python_swaps(later, refusal, code, target, seen)
            bypass.apply(later.swaps)
        finally:
            busy.clear()

    return late


def make_guard(on_hit: Callable[[Any], Any], stop: Iterable[Any] = ()
               ) -> tuple[Callable[[list[str], list[Plan]], None], Callable[[], None],
                          Callable[[], list[str]]]:
    """`(arm, disarm, problems)` for the student's own process (`autograder check`, otter),
    where a question's refusals hold while its calls run: `arm(names, plans)` refuses `names`
    until `disarm()` (arming the names already armed costs nothing); a refusal calls
    `on_hit((kind, index))`, `kind` one of "routine", "library", "compiler". `problems()` says
    what could not be refused (an older torch without the registration API, say), so that the
    result can say so instead of the check crashing. The sandboxed worker never disarms: it
    uses `install`.

    Everything arming needs is taken here and kept in this closure."""
    import torch

    _isinstance, _tuple = isinstance, tuple
    make = getattr(torch._C, "_dispatch_library", None)
    python_library = torch.library.Library
    catch_warnings, simplefilter = warnings.catch_warnings, warnings.simplefilter
    always = armed_state.always(isolated)
    plans_built: dict[tuple[str, ...], Built] = {}
    problems: list[str] = []
    handle: list[Any] = []
    kept: list = []
    armed: list[tuple[str, ...]] = []
    stop = list(stop)

    def library():
        if make is not None:
            try:
                return make("IMPL", "aten", "", "<forbidden routine>", 0)
            except TypeError:      # an older signature
                pass
        return python_library("aten", "IMPL")

    def arm(names: list[str], plans: list[Plan]) -> None:
        key = _tuple(names)
        if armed and armed[0] == key:
            return
        disarm()
        armed.append(key)
        if key in plans_built and any(
                d.split(".")[0] in sys.modules and d.split(".")[0] not in plans_built[key].had
                for _, d in plans_built[key].pending):
            del plans_built[key]    # a target's package imported since: refuse it too
        if key not in plans_built:
            # Library implementations the student's process has imported by now count.
            plans_built[key] = _build(names, plans, on_hit, lambda kind, i: (kind, i), always,
                                      dormant=False, tokens=None, stop=stop, load=False)
        built = plans_built[key]
        for note in built.problems:
            if note not in problems:
                problems.append(note)
        if built.registrations:
            try:
                lib = library()
                handle.append(lib)
                old_api = _isinstance(lib, python_library)
                with catch_warnings():
                    simplefilter("ignore")  # "overriding a previously registered kernel"
                    for overload, dispatch_key, kernel in built.registrations:
                        if old_api:
                            lib.impl(overload, kernel, dispatch_key, with_keyset=True)
                        else:
                            lib.impl(overload, dispatch_key, kernel, True)
            except Exception as e:  # noqa: BLE001 - an older torch: say so, do not crash
                note = f"the dispatch-level check could not be installed ({type(e).__name__})"
                if note not in problems:
                    problems.append(note)
        bypass.apply(built.swaps, kept)

    def disarm() -> None:
        armed.clear()
        while handle:
            lib = handle.pop()
            if _isinstance(lib, python_library):
                lib._destroy()
            else:
                lib.reset()
        bypass.undo(kept)

    def report() -> list[str]:
        return list(problems)

    return arm, disarm, report
