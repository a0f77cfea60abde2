// The sentences the server tests draw their random texts from: short, English, of the shipped
// model's domain (software UI), each ending a sentence, so that any draw splits back into them.
#pragma once

namespace transerve::testing {

inline constexpr const char* kSentencePool[] = {
    "Open the file and save it.",
    "The server could not be reached.",
    "Click the button to continue.",
    "This package contains the documentation.",
    "Select a folder for the backup.",
    "The printer is out of paper.",
    "Do you want to delete these files?",
    "Your changes have been saved.",
    "Restart the computer to finish the update.",
    "The password is too short.",
    "Please enter your name and address.",
};

}  // namespace transerve::testing
