#!/usr/bin/env python3
"""Writes the committed seed corpora under fuzz/corpus/ (run from the
repository root).  Seeds are small, valid-looking inputs, so the fuzzers
start from every message type and both handshake modes."""
import os
import struct

def put(name, idx, data):
    d = os.path.join("fuzz", "corpus", name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-%02d" % idx), "wb") as f:
        f.write(data)

# ---- rdv_server: mode byte, then {u8 conn, u8 type, u16 len LE, payload}
def b(x): return struct.pack(">I", len(x)) + x
def u32(v): return struct.pack(">I", v)
def i64(v): return struct.pack(">q", v)
def rec(conn, typ, payload): return bytes([conn, typ]) + struct.pack("<H", len(payload)) + payload
NONCE = b"0123456789abcdef"
HELLO, SET, SET_ONCE, GET, WAIT, ADD, AUTH = 1, 2, 3, 4, 5, 6, 7
def join(conn, job=b"job", flags=0, proof=b"", key=b""):
    return rec(conn, HELLO, b(job) + b(NONCE) + u32(flags)) + rec(conn, AUTH, b(proof) + b(key))
put("rdv_server", 0, b"\x00" + join(0) + rec(0, SET, b(b"k") + b(b"v")) +
    join(1) + rec(1, GET, b(b"k") + u32(100)) + rec(1, GET, b(b"x") + u32(50)) +
    rec(0, WAIT, u32(100) + u32(2) + b(b"k") + b(b"y")) + rec(0, SET, b(b"y") + b(b"1")) +
    rec(0, ADD, b(b"n") + i64(5)) + rec(1, SET_ONCE, b(b"n") + b(b"7")))
put("rdv_server", 1, b"\x80" + join(0, flags=1, proof=b"p" * 32) + rec(0, SET, b(b"k") + b(b"v")))
put("rdv_server", 2, b"\x00" + join(0, b"reg", flags=1, proof=b"p" * 32, key=b"K" * 32) +
    join(1, b"reg") + rec(1, ADD, b(b"n") + i64(-1)))
put("rdv_server", 3, b"\x00" + rec(0, SET, b(b"k") + b(b"v")) + rec(0, 0x81, b"") +
    rec(1, HELLO, b(b"") + b(b"x")) + rec(1, 0x77, b"zz"))

# ---- tcp_wire: mode byte (even: raw to the acceptor; odd: data frames
# after a genuine handshake), then the stream; little-endian fields.
def le32(v): return struct.pack("<I", v)
def le64(v): return struct.pack("<Q", v)
JOB, COMM = 0x6a6f62, 0x636f6d6d
HELLO_MAGIC, PROOF_MAGIC, FRAME_MAGIC = 0x324f4c4c45485457, 0x32464f4f52505457, 0x314d415246545700
hello = le64(HELLO_MAGIC) + le32(3) + le32(0) + le64(JOB) + le64(COMM) + le32(0) + le32(1) + NONCE
put("tcp_wire", 0, b"\x00" + hello + le64(PROOF_MAGIC) + b"m" * 32)
put("tcp_wire", 1, b"\x00" + b"GET / HTTP/1.0\r\n\r\n")
def frame(tag, payload, length=None):
    n = len(payload) if length is None else length
    return le64(FRAME_MAGIC) + le64(tag) + le64(7) + le64(8) + le64(n) + payload
put("tcp_wire", 2, b"\x01" + frame(1, b"hello") + frame(2, b"x" * 100) + frame(3, b"unexpected"))
put("tcp_wire", 3, b"\x01" + frame(1, b"y" * 80) + frame(9, b"") + frame(2, b"ab", 1000))

# ---- config: override string NUL one value
for i, s in enumerate([b"WEFT_CHUNK_SIZE=64k,WEFT_ALGO=allreduce:ring,broadcast:tree\x0010s",
                       b"WEFT_TIMEOUT=5s,WEFT_MAX_INFLIGHT=4\x00128m",
                       b"WEFT_LOG=warn,WEFT_RDV_MAX_FRAME=2m\x00yes",
                       b"WEFT_PORT_RANGE=1000-2000,WEFT_TOKEN=x\x00[::1]:29500",
                       b"WEFT_CHUNK_SIZ=1\x00host:1"]):
    put("config", i, s)
