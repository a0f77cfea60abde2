#!/usr/bin/python3
"""Unit tests of the benchmark data's cleaning rules: python3 bench/test_language_detection_data.py"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import language_detection_data as data  # noqa: E402


class CleanString(unittest.TestCase):
    def test_accelerators_placeholders_and_markup_are_removed(self):
        text, why = data.clean_string("_Open %s using a <b>new</b> window",
                                      "%s in einem <b>neuen</b> Fenster ö_ffnen")
        self.assertIsNone(why)
        self.assertEqual(text, ("in einem neuen Fenster öffnen", True))
        # A word both languages have ("in") is enough to leave the stricter subset.
        self.assertFalse(data.clean_string("Open in a window", "In einem Fenster öffnen")[0][1])

    def test_untranslated_and_letterless_strings_are_dropped(self):
        self.assertEqual(data.clean_string("Help", "help")[1], "identical")
        self.assertEqual(data.clean_string("%d%%", "%d %%")[1], "no_letters")
        self.assertEqual(data.clean_string("Cannot read the file", "Fehler: the file could not")[1],
                         "english")

    def test_words_shared_with_other_languages_are_not_taken_for_english(self):
        # "for", "at", "to", "is", "on" are Norwegian, Danish, Czech, Dutch, Finnish words.
        text, why = data.clean_string("Wait for it to finish",
                                      "Vent for at den skal bli ferdig, det er to")
        self.assertIsNone(why)
        text, why = data.clean_string("The archive is damaged", "Het archief is beschadigd")
        self.assertIsNone(why)

    def test_visual_order_hebrew_is_dropped(self):
        logical = "הקובץ לא נמצא במקום"
        self.assertIsNone(data.clean_string("File not found", logical)[1])
        self.assertEqual(data.clean_string("File not found", logical[::-1])[1], "reversed")

    def test_prose_means_no_word_shared_with_the_msgid(self):
        self.assertEqual(data.clean_string("Open a Git repository", "Git-Repository öffnen")[0],
                         ("Git-Repository öffnen", False))
        self.assertEqual(data.clean_string("Open a repository", "Projektarchiv öffnen")[0],
                         ("Projektarchiv öffnen", True))


class LongTexts(unittest.TestCase):
    def test_strings_of_one_catalog_are_joined_until_long_enough(self):
        strings = [(f"Zeile Nummer {i} mit etwas deutschem Text darin.", i % 2 == 0)
                   for i in range(20)]
        joined = data.long_texts({"cat": strings}, prose_only=False)
        self.assertTrue(joined)
        for domain, text in joined:
            self.assertEqual(domain, "cat")
            self.assertGreaterEqual(len(text), data.LONG_MIN)
        prose = data.long_texts({"cat": strings}, prose_only=True)
        for _, text in prose:
            self.assertNotIn("Nummer 1 ", text)  # odd lines are not prose


if __name__ == "__main__":
    unittest.main()
