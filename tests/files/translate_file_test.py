#!/usr/bin/env python3
"""Subtitle files through the real transerve-translate (--file, --output), checked by
independent parsers: Debian's python3-srt and python3-webvtt.

Random SubRip and WebVTT files (CRLF or LF, a byte-order mark or not, markup, dialogue cues,
cues over two lines, NOTE and STYLE blocks, cue settings, no final line end) are translated with
the shipped model, two at once. The translated file must hold the same cues with the same
timings, identifiers and settings; every cue's text translated and on no more lines than it
had (as many where the translation has the spaces); each tag as many times as in the source;
the NOTE and STYLE blocks byte for byte. A file that is not of its format, and an unknown
extension, are refused with the reason and an exit status.

Usage: translate_file_test.py BIN_DIR SOURCE_DIR
"""
import os
import random
import re
import subprocess
import sys
import tempfile

import srt
import webvtt

BIN, SRC = sys.argv[1], sys.argv[2]
MODEL = os.path.join(SRC, "models", "en-de-small")
TRANSLATE = os.path.join(BIN, "transerve-translate")

SUBJECTS = ["The server", "The model", "Every request", "The client", "This document",
            "The new version", "A user"]
VERBS = ["translates", "reads", "sends", "keeps", "loads", "checks", "writes"]
OBJECTS = ["the text", "every sentence", "the file", "a long document", "the answer",
           "the whole page", "each line"]
TAGS_SRT = [("<i>", "</i>"), ("<b>", "</b>"), ('<font color="#ffff00">', "</font>")]
TAGS_VTT = [("<i>", "</i>"), ("<b>", "</b>"), ("<c.yellow>", "</c>")]

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, flush=True)


def sentence(rng):
    return "%s %s %s." % (rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS))


def cue_lines(rng, subrip):
    kind = rng.randrange(4)
    if kind == 0:  # dialogue
        return ["- " + sentence(rng), "- " + sentence(rng)]
    words = (sentence(rng) + " " + sentence(rng)).split(" ")
    if rng.randrange(2):
        open_tag, close_tag = rng.choice(TAGS_SRT if subrip else TAGS_VTT)
        words[0] = open_tag + words[0]
        words[2] = words[2] + close_tag
    if kind == 1:  # one line
        return [" ".join(words)]
    cut = len(words) // 2
    return [" ".join(words[:cut]), " ".join(words[cut:])]


def timestamp(ms, subrip):
    h, ms = divmod(ms, 3600000)
    m, ms = divmod(ms, 60000)
    s, ms = divmod(ms, 1000)
    return "%02d:%02d:%02d%s%03d" % (h, m, s, "," if subrip else ".", ms)


def random_file(rng, subrip):
    nl = "\r\n" if rng.randrange(2) else "\n"
    out = "\ufeff" if rng.randrange(4) == 0 else ""
    blocks = []
    if not subrip:
        out += "WEBVTT - random" + nl + nl
        blocks.append("STYLE" + nl + "::cue { color: white }")
        blocks.append("NOTE made by translate_file_test" + nl + "on two lines")
    cues = []
    at = rng.randrange(1000, 5000)
    for c in range(rng.randrange(3, 9)):
        start, end = at, at + rng.randrange(800, 4000)
        at = end + rng.randrange(0, 500)
        ident = str(c + 1) if subrip else "cue-%d" % c
        settings = " align:start line:0" if not subrip and rng.randrange(2) else ""
        lines = cue_lines(rng, subrip)
        cues.append((ident, start, end, settings, lines))
        blocks.append(nl.join([ident, timestamp(start, subrip) + " --> " + timestamp(end, subrip)
                               + settings] + lines))
    out += (nl + nl).join(blocks) + (nl if rng.randrange(3) else "")
    return out, cues


def tags_of(text):
    return sorted(re.findall(r"</?[a-z][^>]*>", text))


def translate(paths):
    """Runs transerve-translate on every (in, out) pair at once; returns the exit statuses."""
    procs = [subprocess.Popen([TRANSLATE, "--model_dir=" + MODEL, "--file=" + src,
                               "--output=" + dst], stderr=subprocess.PIPE, text=True)
             for src, dst in paths]
    results = []
    for p in procs:
        _, err = p.communicate(timeout=300)
        results.append((p.returncode, err))
    return results


def check_subrip(path, cues, name):
    with open(path, encoding="utf-8-sig") as f:
        parsed = list(srt.parse(f.read()))
    check(len(parsed) == len(cues), "%s: %d cues, want %d" % (name, len(parsed), len(cues)))
    changed = 0
    for got, (ident, start, end, _, lines) in zip(parsed, cues):
        check(str(got.index) == ident, "%s: cue %s numbered %s" % (name, ident, got.index))
        check(round(got.start.total_seconds() * 1000) == start
              and round(got.end.total_seconds() * 1000) == end,
              "%s: cue %s timing %s --> %s" % (name, ident, got.start, got.end))
        out_lines = got.content.split("\n")
        check(1 <= len(out_lines) <= len(lines), "%s: cue %s has %d lines, had %d" % (
            name, ident, len(out_lines), len(lines)))
        check(tags_of(got.content) == tags_of("\n".join(lines)),
              "%s: cue %s tags %s, source %s" % (name, ident, tags_of(got.content),
                                                 tags_of("\n".join(lines))))
        changed += got.content != "\n".join(lines)
    check(changed == len(cues), "%s: %d of %d cues translated" % (name, changed, len(cues)))


def check_webvtt(path, cues, name):
    parsed = webvtt.read(path)
    got_cues = parsed.captions
    check(len(got_cues) == len(cues), "%s: %d cues, want %d" % (name, len(got_cues), len(cues)))
    with open(path, encoding="utf-8") as f:
        written = f.read()
    for block in ("STYLE", "::cue { color: white }", "NOTE made by translate_file_test",
                  "on two lines"):
        check(block in written, "%s: %r lost" % (name, block))
    changed = 0
    for got, (ident, start, end, settings, lines) in zip(got_cues, cues):
        check(got.identifier == ident, "%s: cue %s identified as %s" % (name, ident,
                                                                         got.identifier))
        check(got.start == timestamp(start, False) and got.end == timestamp(end, False),
              "%s: cue %s timing %s --> %s" % (name, ident, got.start, got.end))
        timing = timestamp(start, False) + " --> " + timestamp(end, False) + settings
        check(timing in written, "%s: cue %s timing line %r lost" % (name, ident, timing))
        check(1 <= len(got.lines) <= len(lines), "%s: cue %s has %d lines, had %d" % (
            name, ident, len(got.lines), len(lines)))
        check(tags_of(got.raw_text) == tags_of("\n".join(lines)),
              "%s: cue %s tags %s" % (name, ident, tags_of(got.raw_text)))
        changed += got.raw_text != "\n".join(lines)
    check(changed == len(cues), "%s: %d of %d cues translated" % (name, changed, len(cues)))


def main():
    seed = random.randrange(1 << 30)
    print("seed", seed, flush=True)
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as work:
        for round_ in range(3):
            made = []
            for subrip in (True, False):
                text, cues = random_file(rng, subrip)
                src = os.path.join(work, "in%d.%s" % (round_, "srt" if subrip else "vtt"))
                with open(src, "w", encoding="utf-8", newline="") as f:
                    f.write(text)
                made.append((src, src + ".de", cues, subrip))
            results = translate([(m[0], m[1]) for m in made])
            for (src, dst, cues, subrip), (rc, err) in zip(made, results):
                check(rc == 0, "%s: exit %d: %s" % (src, rc, err))
                if rc != 0:
                    continue
                if subrip:
                    check_subrip(dst, cues, src)
                else:
                    check_webvtt(dst, cues, src)

        # Bad files: refused with the reason, nothing written.
        bad = os.path.join(work, "letter.srt")
        with open(bad, "w") as f:
            f.write("Dear Anna,\n\nthis is a letter, not subtitles.\n")
        (rc, err), = translate([(bad, bad + ".de")])
        check(rc == 1 and "no cue timing line" in err, "letter.srt: exit %d: %s" % (rc, err))
        check(not os.path.exists(bad + ".de"), "letter.srt: an output was written")
        novtt = os.path.join(work, "plain.vtt")
        with open(novtt, "w") as f:
            f.write("00:01.000 --> 00:02.000\nHello.\n")
        (rc, err), = translate([(novtt, novtt + ".de")])
        check(rc == 1 and "WEBVTT" in err, "plain.vtt: exit %d: %s" % (rc, err))
        other = os.path.join(work, "notes.docx")
        with open(other, "w") as f:
            f.write("x")
        (rc, err), = translate([(other, other + ".de")])
        check(rc == 2 and ".srt, .vtt" in err, "notes.docx: exit %d: %s" % (rc, err))

    if failures:
        print("%d failures (seed %d)" % (len(failures), seed))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
