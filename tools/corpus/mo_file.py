"""Reads compiled gettext catalogs (.mo) into (context, msgid, msgstr) triples."""

import re
import struct


def read_mo(path):
    """Returns [(msgctxt or None, msgid, msgstr)] for translated entries of a .mo file.

    Plural entries give the singular msgid and the first msgstr form; the header entry
    (empty msgid) is skipped. Catalogs that are not valid .mo files give [].
    """
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 28:
        return []
    magic = struct.unpack("<I", data[:4])[0]
    if magic == 0x950412DE:
        end = "<"
    elif magic == 0xDE120495:
        end = ">"
    else:
        return []
    _rev, n, orig_off, trans_off = struct.unpack(end + "4I", data[4:20])
    raw = []
    try:
        for i in range(n):
            olen, opos = struct.unpack(end + "2I", data[orig_off + 8 * i:orig_off + 8 * i + 8])
            tlen, tpos = struct.unpack(end + "2I", data[trans_off + 8 * i:trans_off + 8 * i + 8])
            raw.append((data[opos:opos + olen], data[tpos:tpos + tlen]))
    except struct.error:
        return []
    charset = "utf-8"
    for o, t in raw:
        if o == b"":
            m = re.search(rb"charset=([A-Za-z0-9_.:-]+)", t)
            if m:
                charset = m.group(1).decode("ascii").lower()
            break
    if charset in ("charset", "none", ""):
        charset = "utf-8"
    out = []
    for o, t in raw:
        if not o or not t:
            continue
        try:
            so = o.decode("utf-8")  # msgids are ASCII/UTF-8 in practice
        except UnicodeDecodeError:
            so = o.decode("latin-1")
        try:
            st = t.decode(charset)
        except (UnicodeDecodeError, LookupError):
            try:
                st = t.decode("utf-8")
            except UnicodeDecodeError:
                continue
        ctxt = None
        if "\x04" in so:
            ctxt, so = so.split("\x04", 1)
        so = so.split("\x00", 1)[0]
        st = st.split("\x00", 1)[0]
        if so and st:
            out.append((ctxt, so, st))
    return out
