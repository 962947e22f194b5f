#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
"""Hold droce's account of a sensor run to what the sensor says it did.

rx_check.py DROCE_JSON SENSOR_JSON [SENSOR_JSON...] [--dump DIR] [--streams N]
            [--verify pattern|crc|crc0|none]

DROCE_JSON is droce's --stats-json, each SENSOR_JSON a droce-sensor
--stats-json. The receiver's counters must equal the sensor's expectations
exactly: frames, lossy frames, lost packets, late/duplicate packets, and a
refusal of the right kind for every fault. With droce's --verify pattern or
crc (the default here), every clean frame must have been checked and found
byte-exact; crc0 is droce's --verify crc against a sensor that sent CRC 0
(--frame-crc off): no frame checked, every clean one counted no_crc. With
--dump, every dumped frame is compared byte by byte with droce-sensor's
pattern and its metadata with its info.
"""

import argparse
import glob
import json
import os
import struct
import sys

# sensor fault -> droce refusal (per stream, or for packets of no stream)
FAULT_REFUSAL = {
    "corrupt-icrc": "bad_icrc",
    "wrong-rkey": "bad_rkey",
    "wrong-peer": "wrong_peer",
    "bad-va": "bad_va",
}


def pattern(frame_number, size):
    words = (size + 3) // 4
    base = (frame_number * 0x9E3779B1) & 0xFFFFFFFF
    data = struct.pack("<%dI" % words, *[(base + j) & 0xFFFFFFFF for j in range(words)])
    return data[:size]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("droce")
    ap.add_argument("sensors", nargs="+")
    ap.add_argument("--dump")
    ap.add_argument("--streams", type=int, default=None)
    ap.add_argument("--immediate", choices=["hsb", "hsb-lite"], default="hsb")
    ap.add_argument("--verify", choices=["pattern", "crc", "crc0", "none"], default="pattern")
    # A consumer that lost the cpu for longer than its ring of pages lasts
    # finds frames overwritten: counted, not checked, and nothing else.
    ap.add_argument("--slow-consumer", action="store_true")
    a = ap.parse_args()

    d = json.load(open(a.droce))
    sensors = [json.load(open(s)) for s in a.sensors]
    streams = d["rx"]["streams"]
    consumer = d["consumer"]
    errors = []

    def expect(what, got, want):
        status = "ok" if got == want else "MISMATCH"
        print("  %-34s droce %-10s expected %-10s %s" % (what, got, want, status))
        if got != want:
            errors.append(what)

    total = lambda key: sum(s[key] for s in streams)
    refused = lambda why: sum(s["refused"][why] for s in streams)
    want = lambda key: sum(s["expect"][key] for s in sensors)
    fault = lambda name: sum(s["expect"]["faults"][name] for s in sensors)

    if a.streams is not None:
        expect("streams", len(streams), a.streams)
    expect("frames", total("frames"), want("frames_complete"))
    expect("lossy frames", total("frames_lossy"), want("frames_lossy"))
    expect("lost packets", total("lost_packets"), want("lost_packets"))
    expect("late or duplicate (stale_psn)", refused("stale_psn"), want("stale_packets"))
    for f, r in FAULT_REFUSAL.items():
        expect("%s -> %s" % (f, r), refused(r), fault(f))
    expect("wrong-qp -> unknown_qp", d["rx"]["refused_without_stream"]["unknown_qp"],
           fault("wrong-qp"))
    expect("frames dropped by the queue", total("frames_dropped"), 0)
    overwritten = sum(c["overwritten"] for c in consumer)
    overwritten_clean = sum(c["overwritten_clean"] for c in consumer)
    if a.slow_consumer:
        print("  frames overwritten before taken    %d, %d of them whole (allowed: --slow-consumer)"
              % (overwritten, overwritten_clean))
    else:
        expect("frames overwritten before taken", overwritten, 0)
    clean = total("frames") - total("frames_lossy") - overwritten_clean
    expect("frames rewritten while read", sum(c["rewritten_while_read"] for c in consumer), 0)
    checked = clean if a.verify in ("pattern", "crc") else 0
    expect("clean frames checked byte-exact", sum(c["checked"] for c in consumer), checked)
    expect("clean frames with CRC 0 (no_crc)", sum(c["no_crc"] for c in consumer),
           clean if a.verify == "crc0" else 0)
    expect("clean frames without metadata", sum(c["no_metadata"] for c in consumer), 0)
    expect("frames that did not match", sum(c["mismatched"] for c in consumer), 0)
    expect("failed receive paths", sum(1 for s in streams if s["failed"]), 0)
    sent = sum(s["packets"] for s in sensors)
    print("  (sensor packets on the wire: %d; droce placed %d)" % (sent, total("packets")))

    if a.dump:
        infos = sorted(glob.glob(os.path.join(a.dump, "*.json")))
        if not infos:
            errors.append("no dumped frames in %s" % a.dump)
        exact = 0
        for path in infos:
            info = json.load(open(path))
            raw = open(path[:-5] + ".bin", "rb").read()
            md = info["metadata"]
            if len(raw) != info["frame_size"]:
                errors.append("%s: %d bytes, frame size %d" % (path, len(raw), info["frame_size"]))
                continue
            if info["lossy"] or md is None:
                continue
            if raw != pattern(md["frame_number"], len(raw)):
                errors.append("%s: bytes differ from the pattern of frame %d"
                              % (path, md["frame_number"]))
            if md["bytes_written"] != info["frame_size"]:
                errors.append("%s: bytes_written %d" % (path, md["bytes_written"]))
            shift = 12 if a.immediate == "hsb" else 8
            if md["psn"] != info["psn"] or info["immediate"] != (info["psn"] << shift | info["page"]):
                errors.append("%s: psn/immediate/page disagree" % path)
            exact += 1
        print("  dumped frames byte-exact against the pattern: %d of %d" % (exact, len(infos)))

    if errors:
        print("rx_check: FAILED: " + ", ".join(errors))
        return 1
    print("rx_check: droce reported exactly what the sensor did")
    return 0


if __name__ == "__main__":
    sys.exit(main())
