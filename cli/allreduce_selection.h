// An allreduce selection as a user gives it (--algo, --comm, CCL_ALLREDUCE),
// checked on the control node before it is printed or handed to the ranks.
#pragma once

#include <string>

#include "common/expected.h"

namespace xft::cli {

// `what` names the source in the error ("--comm", "CCL_ALLREDUCE"). Accepts
// "auto", "all" where allow_all, or what comm::Selection::parse reads, made
// only of letters, digits and "_:;- " (at most 1024 bytes); the one-line error
// shows the value with its control bytes escaped.
Expected<void> check_allreduce_selection(const std::string& what, const std::string& text, bool allow_all = false);

}  // namespace xft::cli
