#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
"""Check the ICRC of every RoCEv2 frame in a pcap file (tcpdump -w).

tshark 4.0's InfiniBand dissector shows the ICRC but does not check it, so
this recomputes it as the spec and Linux rxe do: CRC-32 (zlib's) over 8
bytes of 0xff and the IPv4 header, UDP header, BTH and the rest of the
packet up to the ICRC, with IPv4 TOS, TTL and header checksum, the UDP
checksum and BTH byte 4 (FECN, BECN, reserved) all ones; stored little
endian. Prints the frames per sender and their opcodes; exits 1 when any
ICRC is wrong or no RoCEv2 frame is there.

Usage: roce_icrc.py FILE.pcap
"""

import collections
import struct
import sys
import zlib

ROCE_PORT = 4791

# The vector of shared/reference/roce-wire.md (a CNP from a ConnectX-4 Lx):
# the check itself is checked before it judges a capture.
VECTOR = bytes.fromhex(
    "e41d2dab2bc27cfe90643b320800"
    "45c2003c718c400040119161" "0a001101" "0a001201"
    "000012b700280000" "8100ffff40000118" "00000000"
    "00000000000000000000000000000000" "82fd002a")


def pcap_frames(path):
    """Yield the frames of a classic pcap file with Ethernet link type."""
    with open(path, "rb") as f:
        header = f.read(24)
        if len(header) < 24:
            raise SystemExit("%s: not a pcap file (%d bytes)" % (path, len(header)))
        magic = header[:4]
        if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
            endian = "<"
        elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
            endian = ">"
        else:
            raise SystemExit("%s: not a classic pcap file (magic %s)" % (path, magic.hex()))
        linktype = struct.unpack(endian + "I", header[20:24])[0]
        if linktype != 1:
            raise SystemExit("%s: link type %d, not Ethernet" % (path, linktype))
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            caplen, wirelen = struct.unpack(endian + "II", rec[8:16])
            data = f.read(caplen)
            if caplen != wirelen:
                raise SystemExit("%s: a frame was cut to %d of %d bytes (tcpdump -s 0)"
                                 % (path, caplen, wirelen))
            yield data


def roce_packet(frame):
    """The IPv4 packet (header to ICRC) of a RoCEv2 frame, or None."""
    if len(frame) < 14 + 20 + 8 + 12 + 4 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0x0f) * 4
    total = struct.unpack(">H", ip[2:4])[0]
    if ip[0] >> 4 != 4 or ip[9] != 17 or total > len(ip):
        return None
    if struct.unpack(">H", ip[ihl + 2:ihl + 4])[0] != ROCE_PORT:
        return None
    return ip[:total], ihl


def icrc(ip, ihl):
    """The ICRC bytes a packet should end in."""
    b = bytearray(ip[:-4])
    b[1] = 0xff                      # TOS
    b[8] = 0xff                      # TTL
    b[10:12] = b"\xff\xff"           # header checksum
    b[ihl + 6:ihl + 8] = b"\xff\xff"  # UDP checksum
    b[ihl + 8 + 4] = 0xff            # BTH: FECN, BECN, reserved
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(b)))


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    ip, ihl = roce_packet(VECTOR)
    if icrc(ip, ihl) != ip[-4:]:
        raise SystemExit("the ICRC computation does not reproduce the reference vector")
    senders = collections.Counter()
    opcodes = collections.Counter()
    bad = 0
    for n, frame in enumerate(pcap_frames(sys.argv[1]), 1):
        found = roce_packet(frame)
        if found is None:
            continue
        ip, ihl = found
        src = ".".join(str(x) for x in ip[12:16])
        opcode = ip[ihl + 8]
        senders[src] += 1
        opcodes[(src, opcode)] += 1
        want = icrc(ip, ihl)
        if want != ip[-4:]:
            bad += 1
            if bad <= 10:
                print("frame %d from %s, opcode 0x%02x: ICRC %s, should be %s"
                      % (n, src, opcode, ip[-4:].hex(), want.hex()))
    for src, count in sorted(senders.items()):
        ops = ", ".join("0x%02x x%d" % (op, c)
                        for (s, op), c in sorted(opcodes.items()) if s == src)
        print("%s sent %d RoCEv2 frames (opcodes %s)" % (src, count, ops))
    if not senders:
        print("no RoCEv2 frame in %s" % sys.argv[1])
        return 1
    print("%d RoCEv2 frames, %d with a wrong ICRC" % (sum(senders.values()), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
