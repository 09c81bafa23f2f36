"""Programs: JAX code with state, exported once and run later without Python.

A :class:`Program` subclass declares

* **globals**: class attributes holding pytrees of arrays (dicts, lists,
  tuples, namedtuples, ...). Each distinct array leaf is one global slot; two
  attributes that share a leaf (``_x = _params["x"]``) share the slot, so a
  store through one is seen through the other.
  :meth:`Program.export_global` marks a tree with options.
* **procedures**: public methods. Each parameter's default value gives its
  input signature (``Program.like(tree)`` or a tree of
  ``jax.ShapeDtypeStruct``); outputs come from tracing. Reading ``self.attr``
  reads globals; assigning ``self.attr = tree`` stores them.
* **kernels**: ``@Program.kernel`` functions, jitted static helpers.

Instantiating the class traces and compiles every procedure. Calls run
in-process on oxla's device; :meth:`Program.get_mlir_module` gives the whole
program as one StableHLO module, and :meth:`Program.get_compiled_artifact`
packs it with the globals' initial values into a ``.oxla`` file that the
``oxla run`` command, the ``oxla-runtime`` Rust crate and the C ABI load
without Python (format: ``docs/program_artifact.md``).
"""

from __future__ import annotations

import inspect
import json
import struct
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from . import PLATFORM, __version__

__all__ = ["Program", "CompiledArtifact", "GlobalSpec"]

#: File magic and format version of a program artifact.
ARTIFACT_MAGIC = b"OXLAPRG\0"
ARTIFACT_VERSION = 1
#: The StableHLO version the artifact's module is serialized at (the newest
#: oxla reads, so no feature is lost in a downgrade).
ARTIFACT_STABLEHLO_VERSION = "1.17.0"
#: Each global's data starts at a multiple of this many bytes.
DATA_ALIGNMENT = 64

_HEADER = struct.Struct("<8sII6Q")


# --------------------------------------------------------------------------
# Element types


def mlir_element_type(dtype) -> str:
    """The StableHLO element type name of a numpy dtype (``f32``, ``i1``...)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "i1"
    if dtype.kind == "f" or dtype.name in _ML_DTYPE_NAMES:
        return _ML_DTYPE_NAMES.get(dtype.name, f"f{dtype.itemsize * 8}")
    if dtype.kind == "i":
        return f"i{dtype.itemsize * 8}"
    if dtype.kind == "u":
        return f"ui{dtype.itemsize * 8}"
    if dtype.kind == "c":
        return f"complex<f{dtype.itemsize * 4}>"
    raise TypeError(f"oxla programs cannot hold arrays of dtype {dtype}")


_ML_DTYPE_NAMES = {
    "bfloat16": "bf16",
    "float8_e4m3fn": "f8E4M3FN",
    "float8_e5m2": "f8E5M2",
    "float8_e4m3b11fnuz": "f8E4M3B11FNUZ",
    "float8_e4m3fnuz": "f8E4M3FNUZ",
    "float8_e5m2fnuz": "f8E5M2FNUZ",
    "int4": "i4",
    "uint4": "ui4",
}


# --------------------------------------------------------------------------
# Markers


@dataclass(frozen=True)
class GlobalSpec:
    """A class attribute marked by :meth:`Program.export_global`."""

    tree: Any
    initialize: bool = True
    mutable: bool = True


class _Kernel:
    """A ``@Program.kernel`` function: jitted, and static (no ``self``)."""

    def __init__(self, fn, jit_kwargs):
        self.fn = fn
        self.jitted = jax.jit(fn, **jit_kwargs)
        self.__doc__ = fn.__doc__
        self.__name__ = getattr(fn, "__name__", "kernel")

    def __get__(self, instance, owner=None):
        return self.jitted

    def __call__(self, *args, **kwargs):
        return self.jitted(*args, **kwargs)


def _is_array(x) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic))


def _is_abstract(x) -> bool:
    return isinstance(x, jax.ShapeDtypeStruct)


def _is_array_tree(value) -> bool:
    leaves = jax.tree_util.tree_leaves(value)
    return bool(leaves) and all(_is_array(leaf) for leaf in leaves)


def _is_signature(value) -> bool:
    leaves = jax.tree_util.tree_leaves(value)
    return all(_is_abstract(leaf) for leaf in leaves)


# --------------------------------------------------------------------------
# Globals


@dataclass
class _Slot:
    """One global array."""

    name: str
    aval: jax.ShapeDtypeStruct
    initial: np.ndarray | None
    mutable: bool


@dataclass
class _GlobalAttr:
    """A class attribute holding a tree of globals."""

    name: str
    treedef: Any
    slots: list[int]
    mutable: bool


def _collect_globals(cls):
    """The global slots and attributes of a Program class, in definition order."""
    slots: list[_Slot] = []
    by_id: dict[int, int] = {}
    attrs: dict[str, _GlobalAttr] = {}
    seen: set[str] = set()
    for klass in reversed(cls.__mro__):
        if klass in (Program, object):
            continue
        for name, value in vars(klass).items():
            if name.startswith("__") or name in seen:
                continue
            spec = value if isinstance(value, GlobalSpec) else None
            tree = spec.tree if spec else value
            if spec is None and not _is_array_tree(tree):
                continue
            if spec is not None and not _is_array_tree(tree):
                raise TypeError(
                    f"{cls.__name__}.{name}: export_global needs a tree of arrays"
                )
            seen.add(name)
            mutable = spec.mutable if spec else True
            initialize = spec.initialize if spec else True
            paths_leaves, treedef = jax.tree_util.tree_flatten_with_path(tree)
            indices = []
            for path, leaf in paths_leaves:
                key = id(leaf)
                if key not in by_id:
                    array = np.asarray(leaf)
                    by_id[key] = len(slots)
                    slots.append(
                        _Slot(
                            name=name + jax.tree_util.keystr(path),
                            aval=jax.ShapeDtypeStruct(array.shape, array.dtype),
                            initial=array if initialize else None,
                            mutable=mutable,
                        )
                    )
                else:
                    slot = slots[by_id[key]]
                    slot.mutable = slot.mutable and mutable
                indices.append(by_id[key])
            attrs[name] = _GlobalAttr(name, treedef, indices, mutable)
    return slots, attrs


class _TraceSelf:
    """What ``self`` is while a procedure is traced: global reads and stores
    go to slot values; everything else comes from the class."""

    def __init__(self, program_cls, attrs, values, slots):
        object.__setattr__(self, "_oxla_cls", program_cls)
        object.__setattr__(self, "_oxla_attrs", attrs)
        object.__setattr__(self, "_oxla_values", values)
        object.__setattr__(self, "_oxla_slots", slots)
        object.__setattr__(self, "_oxla_read", set())
        object.__setattr__(self, "_oxla_written", set())

    def __getattr__(self, name):
        attrs = object.__getattribute__(self, "_oxla_attrs")
        if name in attrs:
            attr = attrs[name]
            values = object.__getattribute__(self, "_oxla_values")
            self._oxla_read.update(s for s in attr.slots if s not in self._oxla_written)
            return jax.tree_util.tree_unflatten(
                attr.treedef, [values[s] for s in attr.slots]
            )
        cls = object.__getattribute__(self, "_oxla_cls")
        try:
            static = inspect.getattr_static(cls, name)
        except AttributeError:
            raise AttributeError(
                f"{cls.__name__} has no attribute {name!r}"
            ) from None
        if hasattr(static, "__get__"):
            return static.__get__(self, cls)
        return static

    def __setattr__(self, name, value):
        attrs = self._oxla_attrs
        cls = self._oxla_cls
        if name not in attrs:
            raise AttributeError(
                f"{cls.__name__}.{name} is not a global; only globals (class "
                "attributes holding arrays) can be stored to"
            )
        attr = attrs[name]
        leaves, treedef = jax.tree_util.tree_flatten(value)
        if treedef != attr.treedef:
            raise TypeError(
                f"storing to {cls.__name__}.{name}: the value's structure "
                f"{treedef} differs from the global's {attr.treedef}"
            )
        for slot_idx, leaf in zip(attr.slots, leaves):
            slot = self._oxla_slots[slot_idx]
            if not slot.mutable:
                raise TypeError(f"global {slot.name} is not mutable")
            leaf = jax.numpy.asarray(leaf)
            if leaf.shape != slot.aval.shape or leaf.dtype != slot.aval.dtype:
                raise TypeError(
                    f"storing to global {slot.name}: expected "
                    f"{slot.aval.dtype}{list(slot.aval.shape)}, got "
                    f"{leaf.dtype}{list(leaf.shape)}"
                )
            self._oxla_values[slot_idx] = leaf
            self._oxla_written.add(slot_idx)


# --------------------------------------------------------------------------
# Procedures


@dataclass
class _Procedure:
    """A traced, compiled public method."""

    name: str
    signature: inspect.Signature
    param_names: list[str]
    in_treedefs: list[Any]
    in_avals: list[jax.ShapeDtypeStruct]
    in_names: list[str]
    globals_in: list[int] = field(default_factory=list)
    globals_out: list[int] = field(default_factory=list)
    out_treedef: Any = None
    out_avals: list[jax.ShapeDtypeStruct] = field(default_factory=list)
    out_names: list[str] = field(default_factory=list)
    jitted: Any = None
    text: str = ""


def _input_signature(cls, name, method):
    signature = inspect.signature(method)
    params = list(signature.parameters.values())[1:]
    names, treedefs, avals, leaf_names = [], [], [], []
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(
                f"{cls.__name__}.{name}: *args and **kwargs cannot be exported"
            )
        default = param.default
        if default is param.empty or not _is_signature(default):
            raise TypeError(
                f"{cls.__name__}.{name}: parameter {param.name!r} needs an input "
                "signature as its default, e.g. Program.like(example) or a "
                "jax.ShapeDtypeStruct"
            )
        paths_leaves, treedef = jax.tree_util.tree_flatten_with_path(default)
        names.append(param.name)
        treedefs.append(treedef)
        for path, leaf in paths_leaves:
            avals.append(jax.ShapeDtypeStruct(leaf.shape, leaf.dtype))
            leaf_names.append(param.name + jax.tree_util.keystr(path))
    return signature, names, treedefs, avals, leaf_names


def _trace_procedure(cls, name, method, slots, attrs):
    signature, names, treedefs, avals, leaf_names = _input_signature(
        cls, name, method
    )
    proc = _Procedure(name, signature, names, treedefs, avals, leaf_names)
    counts = [tdef.num_leaves for tdef in treedefs]

    def unflatten_inputs(flat):
        args, pos = [], 0
        for tdef, count in zip(treedefs, counts):
            args.append(jax.tree_util.tree_unflatten(tdef, flat[pos : pos + count]))
            pos += count
        return args

    # First pass: find which globals are read and written, and the outputs.
    def probe(global_values, *flat_inputs):
        values = dict(enumerate(global_values))
        this = _TraceSelf(cls, attrs, values, slots)
        out = method(this, *unflatten_inputs(list(flat_inputs)))
        probe.read = sorted(this._oxla_read)
        probe.written = sorted(this._oxla_written)
        return out

    all_avals = [slot.aval for slot in slots]
    out_shape = jax.eval_shape(probe, all_avals, *avals)
    proc.globals_in = probe.read
    proc.globals_out = probe.written
    out_paths, proc.out_treedef = jax.tree_util.tree_flatten_with_path(out_shape)
    proc.out_avals = [
        jax.ShapeDtypeStruct(leaf.shape, leaf.dtype) for _, leaf in out_paths
    ]
    proc.out_names = ["out" + jax.tree_util.keystr(path) for path, _ in out_paths]
    globals_in = proc.globals_in
    globals_out = proc.globals_out

    def flat_fn(*flat):
        values = dict(zip(globals_in, flat[: len(globals_in)]))
        this = _TraceSelf(cls, attrs, values, slots)
        inputs = unflatten_inputs(list(flat[len(globals_in) :]))
        out = method(this, *inputs)
        missing = set(this._oxla_read) - set(globals_in)
        if missing or sorted(this._oxla_written) != globals_out:
            raise RuntimeError(
                f"{cls.__name__}.{name} reads or stores different globals "
                "on each trace; procedures must be deterministic"
            )
        stored = [values[idx] for idx in globals_out]
        return stored, jax.tree_util.tree_leaves(out)

    proc.jitted = jax.jit(flat_fn, keep_unused=True)
    arg_avals = [slots[idx].aval for idx in globals_in] + avals
    proc.text = proc.jitted.lower(*arg_avals).as_text()
    return proc


def _public_methods(cls):
    methods = {}
    for klass in reversed(cls.__mro__):
        if klass in (Program, object):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or not inspect.isfunction(value):
                continue
            methods[name] = value
    return methods


# --------------------------------------------------------------------------
# The merged module


def _merge_modules(procedures) -> str:
    """One StableHLO module holding every procedure as a public function named
    after it; each procedure's private functions get ``NAME.`` prefixes."""
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir

    context = jax_mlir.make_ir_context()
    with context, ir.Location.unknown():
        merged = ir.Module.create()
        for proc in procedures:
            module = ir.Module.parse(proc.text)
            for op in list(module.body.operations):
                old = ir.StringAttr(op.attributes["sym_name"]).value
                new = proc.name if old == "main" else f"{proc.name}.{old}"
                ir.SymbolTable.replace_all_symbol_uses(old, new, module.operation)
                ir.SymbolTable.set_symbol_name(op, new)
            for op in list(module.body.operations):
                merged.body.append(op)
        if not merged.operation.verify():
            raise RuntimeError("the merged program failed MLIR verification")
        return merged.operation.get_asm(enable_debug_info=False)


def _portable_bytecode(text: str) -> bytes:
    """The module as a versioned StableHLO portable artifact (VHLO bytecode)."""
    from jax._src.lib import _jax

    return _jax.mlir.serialize_portable_artifact(
        text, ARTIFACT_STABLEHLO_VERSION, False
    )


# --------------------------------------------------------------------------
# The artifact


def _aval_json(name, aval):
    return {
        "name": name,
        "type": mlir_element_type(aval.dtype),
        "shape": [int(d) for d in aval.shape],
    }


def _treedef_json(treedef):
    """A JSON description of a tree's structure; leaves are ``null``."""
    leaves = [None] * treedef.num_leaves

    def describe(node):
        if node is None:
            return None
        if isinstance(node, dict):
            return {"dict": {str(k): describe(v) for k, v in node.items()}}
        if isinstance(node, tuple) and hasattr(node, "_fields"):
            return {
                "namedtuple": type(node).__name__,
                "fields": {f: describe(getattr(node, f)) for f in node._fields},
            }
        if isinstance(node, (list, tuple)):
            return {type(node).__name__: [describe(v) for v in node]}
        return {"node": str(type(node).__name__)}

    try:
        return describe(jax.tree_util.tree_unflatten(treedef, leaves))
    except Exception:  # custom nodes that reject None leaves
        return {"treedef": str(treedef)}


class CompiledArtifact:
    """A program packed into one ``.oxla`` file (see ``docs/program_artifact.md``)."""

    def __init__(self, name, module_bytes, metadata, data):
        self.name = name
        self.module_bytes = module_bytes
        self.metadata = metadata
        self.data = data

    def to_bytes(self) -> bytes:
        meta = json.dumps(self.metadata, indent=1, sort_keys=True).encode()
        offset = _HEADER.size
        meta_off = offset
        offset += len(meta)
        module_off = offset
        offset += len(self.module_bytes)
        data_off = -(-offset // DATA_ALIGNMENT) * DATA_ALIGNMENT
        header = _HEADER.pack(
            ARTIFACT_MAGIC,
            ARTIFACT_VERSION,
            0,
            meta_off,
            len(meta),
            module_off,
            len(self.module_bytes),
            data_off,
            len(self.data),
        )
        pad = b"\0" * (data_off - offset)
        return header + meta + self.module_bytes + pad + self.data

    def save(self, path) -> None:
        """Writes the artifact to ``path``."""
        with open(path, "wb") as f:
            f.write(self.to_bytes())


# --------------------------------------------------------------------------
# Program


class Program:
    """Base class of exportable programs; see the module documentation."""

    # Set per subclass instance by __init__.
    _oxla_slots: list
    _oxla_attrs: dict
    _oxla_procedures: dict
    _oxla_values: list

    @staticmethod
    def like(tree):
        """The input signature of ``tree``: a tree of ``jax.ShapeDtypeStruct``."""
        return jax.tree_util.tree_map(
            lambda leaf: jax.ShapeDtypeStruct(np.shape(leaf), _dtype_of(leaf)), tree
        )

    @staticmethod
    def kernel(fn=None, **jit_kwargs):
        """Marks a static helper function as a jitted kernel."""
        if fn is None:
            return lambda f: _Kernel(f, jit_kwargs)
        return _Kernel(fn, jit_kwargs)

    @staticmethod
    def export_global(tree, initialize=True, mutable=True):
        """Marks a class attribute as a global tree with options: without
        ``initialize`` the artifact holds no initial value (a procedure must
        store it before one reads it); without ``mutable`` stores are errors."""
        return GlobalSpec(tree, initialize, mutable)

    def __init__(self):
        cls = type(self)
        slots, attrs = _collect_globals(cls)
        device = jax.devices(PLATFORM)[0]
        procedures = {}
        for name, method in _public_methods(cls).items():
            procedures[name] = _trace_procedure(cls, name, method, slots, attrs)
        if not procedures:
            raise TypeError(f"{cls.__name__} has no public methods to export")
        object.__setattr__(self, "_oxla_slots", slots)
        object.__setattr__(self, "_oxla_attrs", attrs)
        object.__setattr__(self, "_oxla_procedures", procedures)
        object.__setattr__(self, "_oxla_device", device)
        object.__setattr__(
            self,
            "_oxla_values",
            [
                None if slot.initial is None else jax.device_put(slot.initial, device)
                for slot in slots
            ],
        )
        for name in procedures:
            object.__setattr__(self, name, _BoundProcedure(self, name))

    def __setattr__(self, name, value):
        raise AttributeError(
            f"{type(self).__name__} instances are read-only outside procedures"
        )

    def _oxla_call(self, name, args, kwargs):
        proc = self._oxla_procedures[name]
        try:
            bound = proc.signature.bind(None, *args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{type(self).__name__}.{name}: {err}") from None
        flat = []
        for pname, treedef in zip(proc.param_names, proc.in_treedefs):
            value = bound.arguments.get(pname, proc.signature.parameters[pname].default)
            leaves, got = jax.tree_util.tree_flatten(value)
            if got != treedef:
                raise TypeError(
                    f"{type(self).__name__}.{name}: argument {pname!r} has "
                    f"structure {got}, expected {treedef}"
                )
            flat.extend(leaves)
        inputs = []
        for leaf, aval, leaf_name in zip(flat, proc.in_avals, proc.in_names):
            if _is_abstract(leaf):
                raise TypeError(
                    f"{type(self).__name__}.{name}: argument {leaf_name} was not given"
                )
            if not _is_array(leaf):
                leaf = np.asarray(leaf, dtype=aval.dtype)
            if tuple(np.shape(leaf)) != tuple(aval.shape) or np.dtype(
                leaf.dtype
            ) != np.dtype(aval.dtype):
                raise TypeError(
                    f"{type(self).__name__}.{name}: argument {leaf_name} must be "
                    f"{np.dtype(aval.dtype).name}{list(aval.shape)}, got "
                    f"{np.dtype(leaf.dtype).name}{list(np.shape(leaf))}"
                )
            inputs.append(jax.device_put(leaf, self._oxla_device))
        global_args = []
        for idx in proc.globals_in:
            value = self._oxla_values[idx]
            if value is None:
                raise RuntimeError(
                    f"{type(self).__name__}.{name} reads global "
                    f"{self._oxla_slots[idx].name}, which has no value yet"
                )
            global_args.append(value)
        stored, outputs = proc.jitted(*global_args, *inputs)
        for idx, value in zip(proc.globals_out, stored):
            self._oxla_values[idx] = value
        return jax.tree_util.tree_unflatten(proc.out_treedef, outputs)

    # -- export -----------------------------------------------------------

    @staticmethod
    def get_mlir_module(program: "Program") -> str:
        """The whole program as StableHLO text: one public function per procedure."""
        return _merge_modules(program._oxla_procedures.values())

    @staticmethod
    def get_compiled_artifact(program: "Program") -> CompiledArtifact:
        """The program packed for the standalone runtime. Globals start from
        their current values (their initial values if no procedure ran)."""
        text = Program.get_mlir_module(program)
        module_bytes = _portable_bytecode(text)
        data = bytearray()
        globals_meta = []
        for idx, slot in enumerate(program._oxla_slots):
            entry = _aval_json(slot.name, slot.aval)
            entry["mutable"] = slot.mutable
            value = program._oxla_values[idx]
            if value is None:
                entry["initialized"] = False
            else:
                raw = np.ascontiguousarray(np.asarray(value)).astype(
                    np.asarray(value).dtype.newbyteorder("<"), copy=False
                )
                pad = -len(data) % DATA_ALIGNMENT
                data.extend(b"\0" * pad)
                entry["initialized"] = True
                entry["offset"] = len(data)
                entry["nbytes"] = raw.nbytes
                data.extend(raw.tobytes())
            globals_meta.append(entry)
        functions = []
        for proc in program._oxla_procedures.values():
            functions.append(
                {
                    "name": proc.name,
                    "globals_in": proc.globals_in,
                    "globals_out": proc.globals_out,
                    "inputs": [
                        _aval_json(n, a) for n, a in zip(proc.in_names, proc.in_avals)
                    ],
                    "outputs": [
                        _aval_json(n, a)
                        for n, a in zip(proc.out_names, proc.out_avals)
                    ],
                    "input_trees": {
                        n: _treedef_json(t)
                        for n, t in zip(proc.param_names, proc.in_treedefs)
                    },
                    "output_tree": _treedef_json(proc.out_treedef),
                }
            )
        metadata = {
            "format": "oxla-program",
            "version": ARTIFACT_VERSION,
            "name": type(program).__name__,
            "producer": f"oxla {__version__}, jax {jax.__version__}",
            "stablehlo_version": ARTIFACT_STABLEHLO_VERSION,
            "globals": globals_meta,
            "functions": functions,
        }
        return CompiledArtifact(type(program).__name__, module_bytes, metadata, bytes(data))


class _BoundProcedure:
    """``program.NAME``: calls the compiled procedure."""

    def __init__(self, program, name):
        self._program = program
        self._name = name
        self.__doc__ = getattr(type(program), name).__doc__

    def __call__(self, *args, **kwargs):
        return self._program._oxla_call(self._name, args, kwargs)

    def __repr__(self):
        return f"<oxla procedure {type(self._program).__name__}.{self._name}>"


def _dtype_of(leaf):
    dtype = getattr(leaf, "dtype", None)
    if dtype is not None:
        return dtype
    return jax.numpy.asarray(leaf).dtype
