#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# embed.py IMAGE NAME OUT.h: a binary file as a C array (for the kernel image).
import sys

data = open(sys.argv[1], "rb").read()
name = sys.argv[2]
with open(sys.argv[3], "w") as out:
    out.write("/* Generated from %s by embed.py; do not edit. */\n" % sys.argv[1].split("/")[-1])
    out.write("static const unsigned char %s[%d] __attribute__((aligned(64))) = {\n" % (name, len(data) + 1))
    for i in range(0, len(data), 16):
        out.write("\t" + ", ".join("0x%02x" % b for b in data[i:i + 16]) + ",\n")
    out.write("\t0x00\n};\n")
