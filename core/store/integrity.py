"""Integrity check of a DuckDB store file: headers present, file not cut short, every block's checksum right.

DuckDB verifies a block's checksum only when it reads that block, so a store
with a damaged block in a table a write does not read would accept the write
(issue 16: `workloads import` committed onto a store with a corrupt block).
Reading the file once before writing closes that gap. A file that ends part-way
through a block past every block the header counts is a write that failed
part-way (disk full, file-size limit), not damage: the last committed state is
intact and DuckDB opens it. Blocks on the committed free list are not read at
all: a checkpoint writes its new blocks there (shadow paging), so a process
killed mid-checkpoint can leave one part-written or cut short while every block
the committed state uses is whole. The layout checked is
DuckDB's storage format (checked against DuckDB 2.0): three 4 KiB headers (the
main header holds the magic "DUCK" at byte 8; the two database headers hold
iteration, meta block, free list, block count and block size as little-endian
uint64 after their checksum), then whole blocks of `block size` bytes (up to
`block count`; free blocks at the end may be cut off), each starting with a
uint64 checksum of the rest of the block. The free list is metadata: a pointer
(block id in the low 56 bits, one of 64 sub-blocks of (block size - 8) / 64
bytes, floored to 8, in the top 8) to a chain of sub-blocks, each opening with
the next one's pointer, holding a uint64 count and that many int64 block ids.
The checksum is
DuckDB's own: 5381 xor the xor of every 8-byte word times 0xbf58476d1ce4e5b9.
A layout this module does not recognise is left to DuckDB's own checks rather
than refused (a newer DuckDB must not make every store look damaged).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

HEADER_BYTES = 4096
HEADERS = 3
_MUL = np.uint64(0xBF58476D1CE4E5B9)
_SEED = np.uint64(5381)
# Blocks checksummed per read: bounds memory to ~16 MiB for any store size.
_CHUNK_BYTES = 16 * 2**20


def _checksum(words: np.ndarray) -> int:
    """DuckDB's block checksum over whole little-endian uint64 words (block sizes are multiples of 8)."""
    with np.errstate(over="ignore"):
        return int(np.bitwise_xor.reduce(words * _MUL) ^ _SEED)


def _block_checksums(raw: np.ndarray, block_words: int) -> tuple[np.ndarray, np.ndarray]:
    """(stored, computed) checksums of consecutive blocks in a uint64 array."""
    blocks = raw.reshape(-1, block_words)
    with np.errstate(over="ignore"):
        computed = np.bitwise_xor.reduce(blocks[:, 1:] * _MUL, axis=1) ^ _SEED
    return blocks[:, 0], computed


_INVALID = 2**64 - 1
_METADATA_SUBBLOCKS = 64


def _free_blocks(f, header_free: int, blocks: int, block_size: int, whole: int) -> set[int] | None:
    """The committed free list's block ids, or None when it cannot be read soundly (then nothing is taken as free).

    Only whole blocks present in the file are read, and each metadata block the chain visits must pass its
    checksum: a free list read from a damaged block must not excuse anything.
    """
    if header_free == _INVALID:
        return set()  # DuckDB writes no free list when no block is free
    sub = (block_size - 8) // _METADATA_SUBBLOCKS // 8 * 8
    cache: dict[int, bytes] = {}

    def subblock(pointer: int) -> bytes | None:
        block, index = pointer & (2**56 - 1), pointer >> 56
        if block >= min(blocks, whole) or index >= _METADATA_SUBBLOCKS:
            return None
        if block not in cache:
            f.seek(HEADERS * HEADER_BYTES + block * block_size)
            raw = f.read(block_size)
            words = np.frombuffer(raw, dtype="<u8")
            if len(raw) < block_size or int(words[0]) != _checksum(words[1:]):
                return None
            cache[block] = raw
        start = 8 + index * sub
        return cache[block][start:start + sub]

    chunk = subblock(header_free)
    if chunk is None:
        return None
    data, nxt, visited = chunk[8:], struct.unpack_from("<Q", chunk)[0], 1

    def take(n: int) -> bytes | None:
        nonlocal data, nxt, visited
        while len(data) < n:
            if nxt == _INVALID or visited > blocks * _METADATA_SUBBLOCKS:
                return None
            more = subblock(nxt)
            if more is None:
                return None
            data, nxt, visited = data + more[8:], struct.unpack_from("<Q", more)[0], visited + 1
        out, data = data[:n], data[n:]
        return out

    head = take(8)
    if head is None:
        return None
    count = struct.unpack("<Q", head)[0]
    if count > blocks:
        return None
    body = take(8 * count)
    if body is None:
        return None
    ids = np.frombuffer(body, dtype="<i8")
    if ids.size and (ids.min() < 0 or ids.max() >= blocks):
        return None
    return {int(i) for i in ids}


def check_store_file(path: Path) -> str | None:
    """None when the file is sound (or not a layout we know); else one sentence saying what is wrong."""
    try:
        size = path.stat().st_size
    except OSError:
        return None  # not there yet: DuckDB creates it
    if size == 0:
        return None
    with open(path, "rb") as f:
        head = f.read(HEADERS * HEADER_BYTES)
        if len(head) < HEADERS * HEADER_BYTES or head[8:12] != b"DUCK":
            return "it is not a DuckDB database file (or its header is cut short)"
        headers = []
        for i in (1, 2):
            off = i * HEADER_BYTES
            words = np.frombuffer(head[off:off + HEADER_BYTES], dtype="<u8")
            header_sum = int(words[0])
            fields = struct.unpack_from("<5Q", head, off + 8)  # iteration, meta, free list, blocks, block size
            headers.append((header_sum == _checksum(words[1:]), *fields))
        valid = [h for h in headers if h[0]]
        if not valid:
            return "both of its database headers fail their checksum"
        _, _, _, free_pointer, blocks, block_size = max(valid, key=lambda h: h[1])
        if not (4096 <= block_size <= 2**30 and block_size & (block_size - 1) == 0 and blocks < 2**40):
            return None  # a layout we do not know: leave it to DuckDB
        body = size - HEADERS * HEADER_BYTES
        whole = body // block_size
        free = _free_blocks(f, free_pointer, blocks, block_size, whole)
        if free is None:
            # Free list unreadable: the older, coarser rule. A part-block inside the counted blocks is refused;
            # whole blocks missing at the end are taken as free (DuckDB drops free blocks from the file's end).
            if body % block_size and whole < blocks:
                return f"the file is cut short (it ends part-way through block {whole})"
            free = set()
            blocks = min(blocks, whole)
        else:
            # A part-block, or blocks missing, past every block the committed state uses is a write that never
            # completed (the disk filled, or the process was killed, while DuckDB grew the file): not damage.
            missing = next((b for b in range(whole, blocks) if b not in free), None)
            if missing is not None:
                where = "part-way through" if body % block_size and missing == whole else "before"
                return f"the file is cut short (it ends {where} block {missing}, which the committed state uses)"
            blocks = min(blocks, whole)
        words_per_block = block_size // 8
        per_chunk = max(1, _CHUNK_BYTES // block_size)
        f.seek(HEADERS * HEADER_BYTES)
        done = 0
        while done < blocks:
            n = min(per_chunk, blocks - done)
            raw = np.fromfile(f, dtype="<u8", count=n * words_per_block)
            if raw.size < n * words_per_block:
                return "the file is cut short"
            stored, computed = _block_checksums(raw, words_per_block)
            # A block never written since the file grew is all zeros: not damage; nor is a free block.
            bad = (stored != computed) & ~((stored == 0) & ~raw.reshape(n, -1).any(axis=1))
            if free:
                bad &= ~np.isin(np.arange(done, done + n), list(free))
            bad_at = np.flatnonzero(bad)
            if bad_at.size:
                return f"block {done + int(bad_at[0])} of {blocks} fails its checksum (the file is damaged)"
            done += n
    return None


def file_signature(path: Path) -> tuple[int, int, int] | None:
    """(size, mtime_ns, inode): changes whenever the file is written, so a verified file need not be read again."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino
