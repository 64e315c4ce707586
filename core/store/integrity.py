"""Integrity check of a DuckDB store file: headers present, file not cut short, every block's checksum right.

DuckDB verifies a block's checksum only when it reads that block, so a store
with a damaged block in a table a write does not read would accept the write
(issue 16: `workloads import` committed onto a store with a corrupt block).
Reading the file once before writing closes that gap. A file that ends part-way
through a block past every block the header counts is a write that failed
part-way (disk full, file-size limit), not damage: the last committed state is
intact and DuckDB opens it. The layout checked is
DuckDB's storage format (checked against DuckDB 2.0): three 4 KiB headers (the
main header holds the magic "DUCK" at byte 8; the two database headers hold
iteration, meta block, free list, block count and block size as little-endian
uint64 after their checksum), then whole blocks of `block size` bytes (up to
`block count`; free blocks at the end may be cut off), each starting with a
uint64 checksum of the rest of the block. The checksum is
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
        _, _, _, _, blocks, block_size = max(valid, key=lambda h: h[1])
        if not (4096 <= block_size <= 2**30 and block_size & (block_size - 1) == 0 and blocks < 2**40):
            return None  # a layout we do not know: leave it to DuckDB
        body = size - HEADERS * HEADER_BYTES
        if body % block_size and body // block_size < blocks:
            return f"the file is cut short (it ends part-way through block {body // block_size})"
        # A part-block past every block the header counts is a write that never completed (the disk filled
        # while DuckDB grew the file): the committed state does not reference it, so it is not damage.
        # DuckDB drops free blocks from the end of the file, so the header may count more blocks than
        # the file holds; the blocks present must all be sound.
        blocks = min(blocks, body // block_size)
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
            # A block never written since the file grew is all zeros: not damage.
            bad = np.flatnonzero((stored != computed) & ~((stored == 0) & ~raw.reshape(n, -1).any(axis=1)))
            if bad.size:
                return f"block {done + int(bad[0])} of {blocks} fails its checksum (the file is damaged)"
            done += n
    return None


def file_signature(path: Path) -> tuple[int, int, int] | None:
    """(size, mtime_ns, inode): changes whenever the file is written, so a verified file need not be read again."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino
