#!/usr/bin/python3
"""Unit tests of the corpus cleaning rules: /usr/bin/python3 tools/corpus/test_clean.py"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clean  # noqa: E402
from html_text import lo_help_paragraphs  # noqa: E402
from mo_file import read_mo  # noqa: E402


def seg(en, de, ui=True):
    return clean.segment_pair(en, de, ui)


class Accelerators(unittest.TestCase):
    def test_gtk_qt_libreoffice_and_cjk_markers_are_removed(self):
        self.assertEqual(seg("_Open File", "Datei ö_ffnen"), [("Open File", "Datei öffnen", None)])
        self.assertEqual(seg("&Save As", "Speichern &unter"),
                         [("Save As", "Speichern unter", None)])
        self.assertEqual(seg("~Insert", "~Einfügen"), [("Insert", "Einfügen", None)])
        self.assertEqual(seg("Open (_O)", "Öffnen (_O)"), [("Open", "Öffnen", None)])

    def test_identifier_underscores_are_kept(self):
        self.assertEqual(seg("file_name is %s", "file_name ist %s"),
                         [("file_name is %s", "file_name ist %s", None)])


class Filters(unittest.TestCase):
    def test_identical_sides(self):
        same = "The file could not be opened."
        self.assertEqual(seg(same, same)[0][2], "identical")

    def test_partly_untranslated_german(self):
        self.assertEqual(seg("Open the file in the editor", "Öffne the file in the Editor")[0][2],
                         "untranslated")

    def test_command_line_options_are_not_untranslated_words(self):
        self.assertIsNone(seg("cannot set --bind-interfaces and --bind-dynamic",
                              "Kann nicht --bind-interfaces und --bind-dynamic setzen")[0][2])

    def test_numbers_must_agree_but_may_be_spelled_out(self):
        self.assertEqual(seg("Version 5 of 6", "Version 5 von 7")[0][2], "number_mismatch")
        self.assertIsNone(seg("1 file failed", "Eine Datei ist fehlgeschlagen")[0][2])

    def test_placeholders_must_agree_in_any_order(self):
        self.assertIsNone(seg("Copy %1$s to %2$s", "%2$s nach %1$s kopieren")[0][2])
        self.assertEqual(seg("Copy %s to %s", "%s kopieren")[0][2], "placeholder_mismatch")

    def test_length_ratio(self):
        self.assertEqual(seg("Calendar", "Eine Einheit oder Variable mit demselben Namen existiert "
                                         "bereits.")[0][2], "length_ratio")

    def test_timezone_and_identifier_labels_are_not_text(self):
        self.assertEqual(seg("Europe/Vienna", "Europa/Wien")[0][2], "not_text")
        self.assertEqual(seg("gtkFileChooser", "gtkDateiwähler")[0][2], "not_text")
        self.assertIsNone(seg("Channel:", "Kanal:")[0][2])


class Segmentation(unittest.TestCase):
    def test_sentences_split_when_counts_agree(self):
        self.assertEqual([(e, d) for e, d, _ in seg("This is one. This is two, e.g. three.",
                                                    "Das ist eins. Das ist zwei, z. B. drei.")],
                         [("This is one.", "Das ist eins."),
                          ("This is two, e.g. three.", "Das ist zwei, z. B. drei.")])

    def test_german_ordinals_do_not_end_sentences(self):
        self.assertEqual(clean.split_sentences("Am 1. Januar geht es los. Ende.", "de"),
                         ["Am 1. Januar geht es los.", "Ende."])

    def test_option_lists_split_by_line(self):
        out = seg("Usage: %s FILE\n\n  -a, --all   do not ignore entries\n  -b   print bar\n",
                  "Aufruf: %s DATEI\n\n  -a, --all   Einträge nicht ignorieren\n"
                  "  -b   bar ausgeben\n")
        self.assertIn(("do not ignore entries", "Einträge nicht ignorieren", None), out)

    def test_markup_is_stripped_from_ui_strings(self):
        self.assertEqual(seg("<b>Note:</b> keep &lt;this&gt;",
                             "<b>Hinweis:</b> behalte &lt;das&gt;"),
                         [("Note: keep <this>", "Hinweis: behalte <das>", None)])


class Keys(unittest.TestCase):
    def test_template_masks_untranslated_names_only(self):
        self.assertEqual(clean.template_key("This package contains the files for libfoo.",
                                            "Dieses Paket enthält die Dateien für libfoo."),
                         "this package contains the files for #")
        self.assertEqual(clean.template_key("Choose Format - Cells", "Wählen Sie Format – Zellen"),
                         "choose # - cells")

    def test_fuzzy_key_ignores_case_punctuation_placeholders(self):
        self.assertEqual(clean.fuzzy_key("Open %s File..."), clean.fuzzy_key("open file"))


class Readers(unittest.TestCase):
    def test_lo_help_keeps_default_platform_variant_only(self):
        page = ('<p id="par_id1" class="paragraph">Key <span class="switchinline">'
                '<span hidden="true" class="MAC">Command</span><span hidden="true">Ctrl</span>'
                '</span>+N</p>')
        self.assertEqual(lo_help_paragraphs(page), {"par_id1": "Key Ctrl+N"})

    def test_mo_reader(self):
        import struct
        import tempfile
        entries = [(b"", b"Content-Type: text/plain; charset=UTF-8\n"),
                   (b"ctx\x04Open", "Öffnen".encode()),
                   (b"%d file\x00%d files", "%d Datei\x00%d Dateien".encode())]
        entries.sort()
        n = len(entries)
        header = 28
        orig_tab = header
        trans_tab = orig_tab + 8 * n
        data_off = trans_tab + 8 * n
        blob, otab, ttab = b"", b"", b""
        for o, _ in entries:
            otab += struct.pack("<2I", len(o), data_off + len(blob))
            blob += o + b"\x00"
        for _, t in entries:
            ttab += struct.pack("<2I", len(t), data_off + len(blob))
            blob += t + b"\x00"
        mo = struct.pack("<7I", 0x950412DE, 0, n, orig_tab, trans_tab, 0, 0) + otab + ttab + blob
        with tempfile.NamedTemporaryFile(suffix=".mo") as f:
            f.write(mo)
            f.flush()
            got = read_mo(f.name)
        self.assertIn(("ctx", "Open", "Öffnen"), got)
        self.assertIn((None, "%d file", "%d Datei"), got)


if __name__ == "__main__":
    unittest.main()
