// What --diff shows for a file: a unified diff (diff -u's format) that
// `patch` applies to the old content to give the new.
#pragma once

#include <string>

namespace xft::playbooks {

// "--- PATH (before)" / "+++ PATH (after)", then hunks "@@ -a,b +c,d @@" with
// three lines of context; a last line without a newline is followed by
// "\ No newline at end of file". Empty when the texts are equal; one line
// saying so when the changed region is too large to compare.
std::string unified_diff(const std::string& before, const std::string& after, const std::string& path);

}  // namespace xft::playbooks
