#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
"""What droce's builder puts on the wire, checked by decoders droce did not
write: tshark's InfiniBand dissector reads every opcode's fields back, and
the fields of lib/cm's connection messages (a REQ with rdma_cm's header);
scapy's contrib.roce computes the ICRC of 1000 random IPv4 frames; an
ICRC written here with zlib checks 300 random IPv6 frames.

usage: test_decoders.py ROCE_FRAMES_TOOL
"""

import csv
import os
import struct
import subprocess
import sys
import tempfile
import zlib

TOOL = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="droce-decoders.")
FIELDS = ["opcode", "psn", "destqp", "a", "p_key", "padcnt"]
EXT = {"reth_va": "reth.va", "reth_rkey": "reth.r_key",
       "reth_dmalen": "reth.dmalen", "immdt": "immdt",
       "aeth_syndrome": "aeth.syndrome", "aeth_msn": "aeth.msn",
       "deth_qkey": "deth.q_key", "deth_srcqp": "deth.srcqp",
       "atomic_swap": "atomiceth.swapdt", "atomic_cmp": "atomiceth.cmpdt",
       "atomic_orig": "atomicacketh.origremdt"}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def number(text, column):
    """tshark prints integers in decimal or 0x-hex, byte fields as bare hex."""
    if text == "":
        return None
    return int(text, 16) if column == "immdt" else int(text, 0)


def pcap_frames(path):
    with open(path, "rb") as f:
        data = f.read()
    off = 24
    while off < len(data):
        _, _, incl, _ = struct.unpack_from("<IIII", data, off)
        yield data[off + 16:off + 16 + incl]
        off += 16 + incl


def check_tshark():
    pcap, expect = os.path.join(WORK, "op.pcap"), os.path.join(WORK, "op.csv")
    subprocess.run([TOOL, "opcodes", pcap, expect], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cols = ["infiniband.bth." + f for f in FIELDS] + \
           ["infiniband." + v for v in EXT.values()]
    cmd = ["tshark", "-r", pcap, "-T", "fields", "-E", "separator=,",
           "-E", "occurrence=f"]
    for c in cols:
        cmd += ["-e", c]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    got = [line.split(",") for line in out.splitlines()]
    with open(expect) as f:
        want = list(csv.DictReader(f))
    if len(got) != len(want):
        fail("tshark decoded %d frames, droce wrote %d" % (len(got), len(want)))
    names = ["opcode", "psn", "destqp", "ackreq", "pkey", "padcnt"] + list(EXT)
    for row, (g, w) in enumerate(zip(got, want)):
        for name, text in zip(names, g):
            exp = None if w[name] == "" else int(w[name])
            if number(text, name) != exp:
                fail("frame %d (opcode %s): %s is %r in tshark, %r built"
                     % (row + 1, w["opcode"], name, text, w[name]))
    print("tshark: %d frames, every opcode, all fields as built" % len(want))


def check_tshark_cm():
    pcap, expect = os.path.join(WORK, "cm.pcap"), os.path.join(WORK, "cm.csv")
    subprocess.run([TOOL, "cm", pcap, expect], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(expect) as f:
        want = list(csv.DictReader(f))
    fields = sorted({w["field"] for w in want})
    cmd = ["tshark", "-r", pcap, "-T", "fields", "-E", "separator=|",
           "-E", "occurrence=f"]
    for fld in fields:
        cmd += ["-e", fld]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = [dict(zip(fields, line.split("|"))) for line in out.splitlines()]
    malformed = subprocess.run(["tshark", "-r", pcap, "-Y", "_ws.malformed"],
                               check=True, capture_output=True, text=True).stdout
    if malformed.strip():
        fail("tshark finds malformed CM frames:\n" + malformed)
    for w in want:
        frame = int(w["frame"])
        if frame > len(rows):
            fail("tshark decoded %d CM frames, droce wrote frame %d" % (len(rows), frame))
        text = rows[frame - 1][w["field"]]
        ok = int(text, 0) == int(w["value"]) if w["value"].isdigit() and text != "" \
            else text == w["value"]
        if not ok:
            fail("CM frame %d: %s is %r in tshark, %r built" % (frame, w["field"], text,
                                                               w["value"]))
    print("tshark: %d CM messages, %d fields as built, none malformed" % (len(rows), len(want)))


def check_scapy(count):
    from scapy.contrib.roce import BTH
    from scapy.layers.l2 import Ether
    pcap = os.path.join(WORK, "r4.pcap")
    subprocess.run([TOOL, "random4", str(count), "4791", pcap], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    n = 0
    for n, frame in enumerate(pcap_frames(pcap), 1):
        pkt = Ether(frame)
        if BTH not in pkt:
            fail("scapy sees no BTH in frame %d" % n)
        wire = pkt[BTH].icrc
        pkt[BTH].icrc = None
        ours = bytes(pkt)[-4:]
        if ours != frame[-4:]:
            fail("frame %d (%d bytes): scapy ICRC %s, droce %s (field %#x)"
                 % (n, len(frame), ours.hex(), frame[-4:].hex(), wire))
    if n != count:
        fail("%d frames, wanted %d" % (n, count))
    print("scapy: ICRC of %d random IPv4 frames equals droce's" % n)


def icrc6(l3):
    """ICRC over an IPv6 frame, written from the rule, with zlib."""
    b = bytearray(l3[:-4])
    b[0] |= 0x0f                # traffic class, high nibble
    b[1:4] = b"\xff\xff\xff"    # traffic class, flow label
    b[7] = 0xff                 # hop limit
    b[40 + 6:40 + 8] = b"\xff\xff"  # UDP checksum
    b[48 + 4] = 0xff            # BTH FECN, BECN, reserved
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(b)))


def check_ipv6(count):
    pcap = os.path.join(WORK, "r6.pcap")
    subprocess.run([TOOL, "random6", str(count), "6", pcap], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    n = 0
    for n, frame in enumerate(pcap_frames(pcap), 1):
        if frame[12:14] != b"\x86\xdd":
            fail("frame %d is not IPv6" % n)
        if icrc6(frame[14:]) != frame[-4:]:
            fail("IPv6 frame %d: zlib ICRC %s, droce %s"
                 % (n, icrc6(frame[14:]).hex(), frame[-4:].hex()))
    print("zlib: ICRC of %d random IPv6 frames equals droce's" % n)


check_tshark()
check_tshark_cm()
check_scapy(1000)
check_ipv6(300)
subprocess.run(["rm", "-rf", WORK])
print("PASS")
