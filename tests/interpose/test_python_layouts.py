"""The GIL-free walker's layout table for this interpreter (interpose/python_layouts.cpp) against the offsets and
sizes its own headers give (python_layout_offsets.c, compiled against them).

Usage: python3 test_python_layouts.py PATH/TO/libasynccheck_python_probe.so PATH/TO/python_layout_offsets

Exits non-zero, naming each number that differs, on any failure.
"""

import ctypes
import subprocess
import sys


def parse(text):
    return dict(line.split("=", 1) for line in text.splitlines() if line)


lib = ctypes.CDLL(sys.argv[1])
lib.asynccheck_test_python_layout.argtypes = [ctypes.c_ulong, ctypes.c_char_p, ctypes.c_int]
buf = ctypes.create_string_buffer(1 << 14)
minor = lib.asynccheck_test_python_layout(sys.hexversion, buf, len(buf))
if minor < 0:
    print("FAIL: no layout table for Python %s, whose headers were given" % sys.version.split()[0])
    sys.exit(1)
table = parse(buf.value.decode())
headers = parse(subprocess.run([sys.argv[2]], check=True, capture_output=True, text=True).stdout)

failures = []
header_version = int(headers.pop("version"))
if header_version >> 16 != sys.hexversion >> 16:
    failures.append("the headers are for %x, the interpreter is %x" % (header_version, sys.hexversion))
for name in sorted(set(table) | set(headers)):
    if table.get(name) != headers.get(name):
        failures.append("%s: table %s, headers %s" % (name, table.get(name, "(none)"), headers.get(name, "(none)")))
for failure in failures:
    print("FAIL: " + failure)
if failures:
    sys.exit(1)
print("ok: python layout table for 3.%d matches the headers of Python %s (%d numbers, headers %x)" %
      (minor, sys.version.split()[0], len(table), header_version))
