"""Read and write safetensors files with numpy only (no torch, no safetensors package).

Format (https://huggingface.co/docs/safetensors): 8-byte little-endian header length N, N bytes of
JSON {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}, then
the data section. Offsets are relative to the data section and the tensors tile it without gaps.
We pad the JSON with spaces so the data section starts on an 8-byte boundary (what the reference
implementation does), which keeps memory-mapped f32 tensors aligned.

Supported dtypes: F32, F16, BF16, I32. numpy has no bfloat16, so BF16 tensors travel as uint16
bit patterns; `to_float64` widens any of them exactly.

Writers are atomic (write to `<path>.tmp-<pid>`, fsync, rename) so an interrupted generator never
leaves a truncated checkpoint that looks valid. `StreamingWriter` writes tensor by tensor after a
header with precomputed offsets, so multi-GB checkpoints never sit in RAM.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

# safetensors dtype name -> (numpy storage dtype, bytes per element)
_STORAGE = {
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),  # raw bfloat16 bit patterns
    "I32": np.dtype("<i4"),
}
_ALIASES = {"f32": "F32", "f16": "F16", "bf16": "BF16", "i32": "I32",
            "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int32": "I32"}


def canonical_dtype(name: str) -> str:
    """'f16' / 'float16' / 'F16' -> 'F16'. Raises ValueError for anything unsupported."""
    if name in _STORAGE:
        return name
    if name.lower() in _ALIASES:
        return _ALIASES[name.lower()]
    raise ValueError(f"unsupported dtype {name!r} (expected one of F32, F16, BF16, I32)")


def f32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns, round to nearest even; NaN stays a quiet NaN.

    Same rule as mnemo::f32_to_bf16: add 0x7fff plus the lowest kept bit, then truncate.
    """
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((bits.astype(np.uint64) + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    is_nan = (bits & 0x7FFFFFFF) > 0x7F800000
    if np.any(is_nan):
        rounded = np.where(is_nan, ((bits >> 16) | 0x40).astype(np.uint16), rounded)
    return rounded


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns -> float32 (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def encode(values: np.ndarray, dtype: str) -> np.ndarray:
    """Convert float/int values to the storage array for `dtype` (F16: numpy's RNE cast)."""
    dtype = canonical_dtype(dtype)
    if dtype == "BF16":
        if values.dtype == np.uint16:
            raise ValueError("encode(BF16) expects float values, not bit patterns")
        return f32_to_bf16_bits(values.astype(np.float32, copy=False))
    if dtype == "I32":
        return np.ascontiguousarray(values, dtype=np.int32)
    return np.ascontiguousarray(values.astype(_STORAGE[dtype], copy=False))


@dataclass
class Tensor:
    """One stored tensor: its safetensors dtype name and the storage array (bf16 as uint16)."""
    dtype: str
    data: np.ndarray

    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self.data.shape)

    def to_float64(self) -> np.ndarray:
        if self.dtype == "BF16":
            return bf16_bits_to_f32(self.data).astype(np.float64)
        return self.data.astype(np.float64)


# ----------------------------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------------------------

def read_header(path: str) -> Tuple[Dict[str, dict], Dict[str, str], int]:
    """Returns (entries, metadata, data_start) after validating every entry against the file."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        prefix = f.read(8)
        if len(prefix) != 8:
            raise ValueError(f"{path}: file is {size} bytes, too short for the 8-byte header length")
        (n,) = struct.unpack("<Q", prefix)
        if n > size - 8 or n > 100 * 1024 * 1024:
            raise ValueError(f"{path}: header length {n} does not fit in a {size}-byte file")
        header = json.loads(f.read(n).decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header is not a JSON object")
    metadata = header.pop("__metadata__", {}) or {}
    data_start = 8 + n
    data_len = size - data_start
    spans = []
    for name, e in header.items():
        dt = canonical_dtype(e["dtype"])
        shape = [int(d) for d in e["shape"]]
        begin, end = (int(v) for v in e["data_offsets"])
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if not (0 <= begin <= end <= data_len):
            raise ValueError(f"{path}: tensor {name!r}: data_offsets [{begin}, {end}) outside the "
                             f"{data_len}-byte data section")
        if end - begin != count * _STORAGE[dt].itemsize:
            raise ValueError(f"{path}: tensor {name!r}: data_offsets hold {end - begin} bytes but "
                             f"shape {shape} of {dt} needs {count * _STORAGE[dt].itemsize}")
        spans.append((begin, end, name))
    spans.sort()
    for (b0, e0, n0), (b1, _, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise ValueError(f"{path}: tensors {n0!r} and {n1!r} overlap")
    return header, metadata, data_start


def read_safetensors(path: str) -> Tuple[Dict[str, Tensor], Dict[str, str]]:
    """Load every tensor of one file (memory-mapped, read-only views)."""
    entries, metadata, data_start = read_header(path)
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    out: Dict[str, Tensor] = {}
    for name, e in entries.items():
        dt = canonical_dtype(e["dtype"])
        begin, end = e["data_offsets"]
        raw = mm[data_start + begin:data_start + end]
        out[name] = Tensor(dt, raw.view(_STORAGE[dt]).reshape([int(d) for d in e["shape"]]))
    return out, metadata


def checkpoint_files(model_dir: str) -> List[str]:
    """The safetensors files of a HF model folder: the single file or every shard of the index."""
    single = os.path.join(model_dir, "model.safetensors")
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index, "r", encoding="utf-8") as f:
            weight_map = json.load(f)["weight_map"]
        return [os.path.join(model_dir, s) for s in sorted(set(weight_map.values()))]
    if os.path.exists(single):
        return [single]
    raise FileNotFoundError(f"{model_dir}: neither model.safetensors nor model.safetensors.index.json")


def read_checkpoint(model_dir: str) -> Dict[str, Tensor]:
    """Every tensor of a model folder (single file or sharded); checks the index against shards."""
    index_path = os.path.join(model_dir, "model.safetensors.index.json")
    weight_map: Optional[Dict[str, str]] = None
    if os.path.exists(index_path):
        with open(index_path, "r", encoding="utf-8") as f:
            weight_map = json.load(f)["weight_map"]
    tensors: Dict[str, Tensor] = {}
    for path in checkpoint_files(model_dir):
        part, _ = read_safetensors(path)
        for name, t in part.items():
            if name in tensors:
                raise ValueError(f"{path}: tensor {name!r} is also in another shard")
            if weight_map is not None and weight_map.get(name) != os.path.basename(path):
                raise ValueError(f"{path}: tensor {name!r} is not mapped to this shard by the index")
            tensors[name] = t
    if weight_map is not None:
        missing = sorted(set(weight_map) - set(tensors))
        if missing:
            raise ValueError(f"{index_path}: tensors missing from their shards: {missing[:5]}")
    return tensors


# ----------------------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------------------

@dataclass
class TensorSpec:
    name: str
    dtype: str  # safetensors name
    shape: Tuple[int, ...]

    @property
    def nbytes(self) -> int:
        count = int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1
        return count * _STORAGE[canonical_dtype(self.dtype)].itemsize


def _header_bytes(specs: Sequence[TensorSpec], metadata: Optional[Dict[str, str]]) -> bytes:
    header: Dict[str, object] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    offset = 0
    for s in specs:
        header[s.name] = {"dtype": canonical_dtype(s.dtype), "shape": list(s.shape),
                          "data_offsets": [offset, offset + s.nbytes]}
        offset += s.nbytes
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((-(8 + len(text))) % 8)  # data section starts 8-byte aligned
    return struct.pack("<Q", len(text)) + text


class StreamingWriter:
    """Write a safetensors file tensor by tensor, in the order of `specs`, atomically.

    with StreamingWriter(path, specs) as w:
        for spec in specs: w.write(spec.name, storage_array_or_chunks)
    Arrays may be passed in several chunks (rows) per tensor via write_chunk/end_tensor.
    """

    def __init__(self, path: str, specs: Sequence[TensorSpec], metadata: Optional[Dict[str, str]] = None):
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            raise ValueError(f"{path}: duplicate tensor names")
        self.path = path
        self.specs = list(specs)
        self.tmp = f"{path}.tmp-{os.getpid()}"
        self.f = open(self.tmp, "wb")
        self.f.write(_header_bytes(self.specs, metadata))
        self.next = 0          # index of the tensor being written
        self.written = 0       # bytes of it written so far

    def write_chunk(self, name: str, storage: np.ndarray) -> None:
        if self.next >= len(self.specs):
            raise ValueError(f"{self.path}: more tensors written than declared ({name!r})")
        spec = self.specs[self.next]
        if name != spec.name:
            raise ValueError(f"{self.path}: expected tensor {spec.name!r} next, got {name!r}")
        want = _STORAGE[canonical_dtype(spec.dtype)]
        if storage.dtype != want:
            raise ValueError(f"{self.path}: tensor {name!r}: storage dtype {storage.dtype} != {want}")
        buf = np.ascontiguousarray(storage)
        self.written += buf.nbytes
        if self.written > spec.nbytes:
            raise ValueError(f"{self.path}: tensor {name!r}: more than {spec.nbytes} bytes written")
        self.f.write(buf.data)  # C-contiguous buffer, no copy

    def end_tensor(self, name: str) -> None:
        spec = self.specs[self.next]
        if self.written != spec.nbytes:
            raise ValueError(f"{self.path}: tensor {name!r}: wrote {self.written} of {spec.nbytes} bytes")
        self.next += 1
        self.written = 0

    def write(self, name: str, storage: np.ndarray) -> None:
        spec = self.specs[self.next] if self.next < len(self.specs) else None
        if spec is not None and tuple(storage.shape) != tuple(spec.shape):
            raise ValueError(f"{self.path}: tensor {name!r}: shape {storage.shape} != declared {spec.shape}")
        self.write_chunk(name, storage)
        self.end_tensor(name)

    def close(self) -> None:
        if self.next != len(self.specs):
            self.abort()
            raise ValueError(f"{self.path}: only {self.next} of {len(self.specs)} tensors written")
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        if not self.f.closed:
            self.f.close()
        if os.path.exists(self.tmp):
            os.remove(self.tmp)

    def __enter__(self) -> "StreamingWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_safetensors(path: str, tensors: Dict[str, Tensor], metadata: Optional[Dict[str, str]] = None) -> None:
    """Write in-memory tensors (already in storage form) to one file, atomically."""
    specs = [TensorSpec(n, t.dtype, t.shape) for n, t in tensors.items()]
    with StreamingWriter(path, specs, metadata) as w:
        for n, t in tensors.items():
            w.write(n, t.data)


def plan_shards(specs: Sequence[TensorSpec], shard_bytes: int = 0, shards: int = 0) -> List[List[TensorSpec]]:
    """Split specs (in order) into shards: at most `shard_bytes` each (a larger tensor gets its own
    shard), or into `shards` groups of roughly equal bytes. Neither given: one group."""
    specs = list(specs)
    if shards and shards > 1:
        # Each tensor goes to the shard its byte midpoint falls in: balanced, order kept.
        total = max(1, sum(s.nbytes for s in specs))
        buckets: List[List[TensorSpec]] = [[] for _ in range(shards)]
        start = 0
        for s in specs:
            buckets[min(shards - 1, (2 * start + s.nbytes) * shards // (2 * total))].append(s)
            start += s.nbytes
        groups = [b for b in buckets if b]
        # Very uneven tensor sizes can leave a bucket empty; split the group with most tensors.
        while len(groups) < shards and any(len(g) > 1 for g in groups):
            i = max(range(len(groups)), key=lambda j: len(groups[j]))
            half = len(groups[i]) // 2
            groups[i:i + 1] = [groups[i][:half], groups[i][half:]]
        return groups
    if not shard_bytes or shard_bytes <= 0:
        return [specs]
    groups = [[]]
    size = 0
    for s in specs:
        if groups[-1] and size + s.nbytes > shard_bytes:
            groups.append([])
            size = 0
        groups[-1].append(s)
        size += s.nbytes
    return groups


def write_checkpoint(model_dir: str, specs: Sequence[TensorSpec],
                     produce: Callable[[TensorSpec, StreamingWriter], None],
                     shard_bytes: int = 0, shards: int = 0,
                     metadata: Optional[Dict[str, str]] = None) -> List[str]:
    """Write a model folder's weights: model.safetensors, or model-0000i-of-0000n.safetensors
    shards plus model.safetensors.index.json. `produce(spec, writer)` writes one tensor (in one
    call to writer.write or several write_chunk calls followed by end_tensor). Returns the files."""
    os.makedirs(model_dir, exist_ok=True)
    groups = plan_shards(specs, shard_bytes, shards)
    meta = {"format": "pt"}
    meta.update(metadata or {})
    # Remove stale weights of a previous layout so readers never see two.
    for old in os.listdir(model_dir):
        if old == "model.safetensors" or old == "model.safetensors.index.json" or \
                (old.startswith("model-") and old.endswith(".safetensors")):
            os.remove(os.path.join(model_dir, old))
    if len(groups) == 1:
        names = ["model.safetensors"]
    else:
        names = [f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors" for i in range(len(groups))]
    for fname, group in zip(names, groups):
        with StreamingWriter(os.path.join(model_dir, fname), group, meta) as w:
            for spec in group:
                produce(spec, w)
    if len(groups) > 1:
        index = {"metadata": {"total_size": sum(s.nbytes for s in specs)},
                 "weight_map": {s.name: fname for fname, g in zip(names, groups) for s in g}}
        write_text_atomic(os.path.join(model_dir, "model.safetensors.index.json"),
                          json.dumps(index, indent=2) + "\n")
    return [os.path.join(model_dir, n) for n in names]


def write_text_atomic(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(tmp, path)


def write_config(model_dir: str, config: dict) -> None:
    """MODEL_DIR/config.json: JSON indented by 2, keys in the dict's order, written atomically."""
    write_text_atomic(os.path.join(model_dir, "config.json"), json.dumps(config, indent=2) + "\n")


def write_model_folder(model_dir: str, tensors: Dict[str, Tensor], config: dict) -> None:
    """A one-file model folder: model.safetensors (tensors already in storage form, metadata
    {"format": "pt"} as torch writes it) and config.json."""
    os.makedirs(model_dir, exist_ok=True)
    write_safetensors(os.path.join(model_dir, "model.safetensors"), tensors, {"format": "pt"})
    write_config(model_dir, config)


def _main(argv: Iterable[str]) -> int:
    """`python3 safetensors_io.py FILE_OR_DIR`: list tensors (name, dtype, shape, min/max)."""
    import sys
    args = list(argv)
    if len(args) != 1:
        print("usage: safetensors_io.py <model.safetensors | model dir>", file=sys.stderr)
        return 2
    target = args[0]
    tensors = read_checkpoint(target) if os.path.isdir(target) else read_safetensors(target)[0]
    for name in sorted(tensors):
        t = tensors[name]
        v = t.to_float64()
        print(f"{name:60s} {t.dtype:5s} {str(list(t.shape)):20s} min {v.min():+.4f} max {v.max():+.4f}")
    return 0


if __name__ == "__main__":
    import sys
    raise SystemExit(_main(sys.argv[1:]))
